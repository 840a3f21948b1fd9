"""The reference-algorithm registry: every algorithm's output, recovery on known graphs,
partial graphs, failures as results, and bad input."""

from __future__ import annotations

import json
import pickle
import random
import warnings

import numpy as np
import pytest

from heuresis_env.discovery.algorithms import (
    ALGORITHMS,
    AlgorithmResult,
    AlgorithmSpec,
    available_algorithms,
    get_algorithm,
    register_algorithm,
    run_algorithm,
)
from heuresis_env.discovery.causallearn_bridge import graph_from_causallearn
from heuresis_env.errors import DataError, HeuresisError, UnknownNameError
from heuresis_env.graphs import EdgeMark, Graph, GraphType
from heuresis_env.metrics import adjacency_f1

BUILTIN = ["pc-fisherz", "pc-kci", "ges", "fci", "direct-lingam", "anm", "notears",
           "notears-mlp", "grasp", "boss"]


def random_dag(d: int, rng: np.random.Generator, expected_degree: float = 2.0) -> np.ndarray:
    """Erdős–Rényi DAG over a random causal order; ``[i, j]`` True for i → j."""
    probability = min(1.0, expected_degree / (d - 1))
    upper = np.triu(rng.random((d, d)) < probability, k=1)
    order = rng.permutation(d)
    return upper[np.ix_(np.argsort(order), np.argsort(order))]


def linear_sem(dag: np.ndarray, n: int, rng: np.random.Generator,
               noise: str = "gaussian") -> np.ndarray:
    """Linear SEM on ``dag`` with weights ±U[0.5, 2]; columns standardized."""
    d = dag.shape[0]
    weights = dag * rng.uniform(0.5, 2.0, (d, d)) * rng.choice([-1.0, 1.0], (d, d))
    x = np.zeros((n, d))
    from heuresis_env.graphs import topological_order

    for j in topological_order(dag):
        scale = rng.uniform(0.5, 2.0)
        e = rng.normal(size=n) if noise == "gaussian" else rng.uniform(-1, 1, n) * 3 ** 0.5
        x[:, j] = x @ weights[:, j] + scale * e
    return (x - x.mean(axis=0)) / x.std(axis=0)


def names_for(d: int) -> list[str]:
    return [f"X{i + 1}" for i in range(d)]


@pytest.fixture(scope="module")
def small_instance():
    """A 5-variable linear non-Gaussian instance (n = 300) with its true DAG."""
    rng = np.random.default_rng(11)
    dag = np.zeros((5, 5), dtype=bool)
    for i, j in [(0, 1), (1, 2), (0, 3), (3, 4), (2, 4)]:
        dag[i, j] = True
    data = linear_sem(dag, 300, rng, noise="uniform")
    return data, names_for(5), Graph.from_dag(dag, names_for(5))


@pytest.fixture
def scratch_registry():
    """Remove algorithms a test registers."""
    before = dict(ALGORITHMS)
    yield
    ALGORITHMS.clear()
    ALGORITHMS.update(before)


# ---- the registry -------------------------------------------------------------------------------


def test_builtin_algorithms_are_registered():
    assert available_algorithms()[: len(BUILTIN)] == BUILTIN
    for name in BUILTIN:
        spec = get_algorithm(name)
        description = spec.describe()
        json.dumps(description)
        assert set(description["params"]) == set(spec.default_params)
        assert spec.graph_type in tuple(GraphType)


def test_unknown_algorithm_lists_the_known_ones():
    with pytest.raises(UnknownNameError) as info:
        get_algorithm("pc-fisher")
    message = str(info.value)
    assert "pc-fisherz" in message and "notears-mlp" in message and "Did you mean" in message
    with pytest.raises(UnknownNameError, match="boss"):
        run_algorithm("lingam", np.zeros((10, 2)), ["a", "b"])


def test_registering_twice_needs_overwrite(scratch_registry):
    spec = get_algorithm("ges")
    with pytest.raises(HeuresisError, match="already registered"):
        register_algorithm(spec)
    register_algorithm(spec, overwrite=True)


# ---- every algorithm on a small instance --------------------------------------------------------


@pytest.mark.parametrize("name", BUILTIN)
def test_every_algorithm_returns_a_valid_graph_of_its_type(name, small_instance):
    data, names, _ = small_instance
    result = run_algorithm(name, data, names, seed=3)
    assert result.ok, result.error
    assert result.algorithm == name
    assert result.variables == tuple(names)
    assert result.graph.names == tuple(names)
    assert result.graph_type == str(get_algorithm(name).graph_type)
    assert result.params == dict(get_algorithm(name).default_params)
    assert result.runtime_seconds > 0
    actual = result.graph.graph_type()
    if result.graph_type == GraphType.DAG:
        assert result.graph.is_dag()
    elif result.graph_type == GraphType.CPDAG:
        assert actual in (GraphType.DAG, GraphType.CPDAG)
    assert result.graph.n_edges() > 0
    json.dumps(result.to_dict())


def test_pc_results_carry_the_deletion_log(small_instance):
    data, names, _ = small_instance
    result = run_algorithm("pc-fisherz", data, names)
    log = result.extras["deletion_log"]
    absent_pairs = 10 - result.graph.n_edges()
    assert len(log) == absent_pairs
    assert {"x", "y", "conditioning_set", "p_value", "level", "order"} <= set(log[0])
    assert all(entry["p_value"] > 0.05 for entry in log)
    assert result.extras["n_tests"] >= len(log)


# ---- recovery on known graphs ---------------------------------------------------------------------


def test_ges_and_pc_fisherz_recover_a_linear_gaussian_skeleton_at_n_5000():
    rng = np.random.default_rng(2024)
    dag = random_dag(10, rng)
    data = linear_sem(dag, 5000, rng)
    names = names_for(10)
    truth = Graph.from_dag(dag, names)
    assert truth.n_edges() >= 6
    for name in ("ges", "pc-fisherz"):
        result = run_algorithm(name, data, names)
        assert result.ok, result.error
        assert adjacency_f1(result.graph, truth) > 0.9, name


def test_direct_lingam_recovers_directions_of_a_linear_non_gaussian_dag():
    rng = np.random.default_rng(7)
    dag = random_dag(6, rng)
    data = linear_sem(dag, 2000, rng, noise="uniform")
    names = names_for(6)
    result = run_algorithm("direct-lingam", data, names)
    assert result.ok, result.error
    np.testing.assert_array_equal(result.graph.directed_adjacency(), dag)
    order = result.extras["causal_order"]
    for edge in result.extras["edges"]:  # every edge goes forward in the causal order
        assert order.index(edge["from"]) < order.index(edge["to"])


def test_direct_lingam_threshold_drops_weak_coefficients():
    rng = np.random.default_rng(8)
    dag = random_dag(6, rng)
    data = linear_sem(dag, 1000, rng, noise="uniform")
    loose = run_algorithm("direct-lingam", data, params={"threshold": 0.0})
    strict = run_algorithm("direct-lingam", data, params={"threshold": 0.5})
    assert strict.graph.n_edges() <= loose.graph.n_edges()
    assert all(abs(e["weight"]) > 0.5 for e in strict.extras["edges"])


def test_fci_finds_an_unshielded_collider_as_a_pag(capsys):
    rng = np.random.default_rng(9)
    n = 3000
    a, b = rng.normal(size=n), rng.normal(size=n)
    c = a + b + rng.normal(size=n)
    d = c + rng.normal(size=n)
    data = np.column_stack([a, b, c, d])
    result = run_algorithm("fci", data, ["A", "B", "C", "D"])
    assert result.ok, result.error
    graph = result.graph
    assert graph.graph_type() == GraphType.PAG
    # A o-> C <-o B and C --> D (arrow into D is compelled by the collider at C)
    assert str(graph.edge("A", "C")) == "A o-> C"
    assert graph.edge("B", "C").mark_u == EdgeMark.CIRCLE
    assert graph.edge("B", "C").mark_v == EdgeMark.ARROW
    assert str(graph.edge("C", "D")) == "C --> D"
    assert not graph.adjacent("A", "B") and not graph.adjacent("A", "D")
    assert capsys.readouterr().out == ""  # causal-learn's prints are swallowed


def test_fci_with_our_fisherz_equals_causal_learn_fci(small_instance):
    from causallearn.search.ConstraintBased.FCI import fci

    data, names, _ = small_instance
    ours = run_algorithm("fci", data, names, params={"alpha": 0.1})
    reference, _ = fci(data, "fisherz", 0.1, verbose=False, show_progress=False,
                       node_names=names)
    assert ours.graph == graph_from_causallearn(reference, names)


def test_fci_runs_with_kci():
    rng = np.random.default_rng(10)
    n = 200
    a = rng.normal(size=n)
    b = np.tanh(2 * a) + 0.3 * rng.normal(size=n)
    c = rng.normal(size=n)
    result = run_algorithm("fci", np.column_stack([a, b, c]), ["A", "B", "C"],
                           params={"test": "kci"})
    assert result.ok, result.error
    assert result.graph.adjacent("A", "B") and result.graph.n_edges() == 1


def test_anm_orients_a_nonlinear_chain():
    rng = np.random.default_rng(12)
    n = 400
    a = rng.normal(size=n)
    b = a ** 3 + rng.normal(size=n)
    c = np.tanh(b) + 0.3 * rng.uniform(-1, 1, n)
    result = run_algorithm("anm", np.column_stack([a, b, c]), ["A", "B", "C"])
    assert result.ok, result.error
    assert result.graph.edge("A", "B").is_directed and result.graph.parents("B") == ["A"]
    assert result.graph.parents("C") == ["B"]
    assert not result.graph.adjacent("A", "C")
    assert [e["direction"] for e in result.extras["orientation"]] == ["x->y", "x->y"]


def test_grasp_and_boss_are_seeded_and_leave_the_global_random_state(small_instance):
    data, names, truth = small_instance
    random.seed(99)
    state = random.getstate()
    for name in ("grasp", "boss"):
        first = run_algorithm(name, data, names, seed=1)
        second = run_algorithm(name, data, names, seed=1)
        assert first.graph == second.graph
        assert random.getstate() == state
        # on this instance both find the true skeleton (GES stops at a denser local optimum)
        assert adjacency_f1(first.graph, truth) == 1.0


# ---- partial graphs -------------------------------------------------------------------------------


def test_a_subset_of_variables_gives_a_partial_graph(small_instance):
    data, names, _ = small_instance
    subset = ["X5", "X1", "X3"]
    result = run_algorithm("ges", data, names, variables=subset)
    assert result.ok
    assert result.variables == tuple(subset)
    assert result.graph.names == tuple(subset)
    full = result.full_graph(names)
    assert full.names == tuple(names)
    assert full.restricted(subset) == result.graph
    for outside in ("X2", "X4"):
        assert full.neighbors(outside) == []
    direct = run_algorithm("ges", data[:, [4, 0, 2]], subset)
    assert direct.graph == result.graph  # the same as running on those columns alone
    with pytest.raises(UnknownNameError, match="X5"):
        result.full_graph(["X1", "X2", "X3"])


def test_unused_columns_are_not_checked(small_instance):
    data, names, _ = small_instance
    corrupted = data.copy()
    corrupted[0, 1] = np.nan
    result = run_algorithm("pc-fisherz", corrupted, names, variables=["X1", "X3", "X4"])
    assert result.ok
    with pytest.raises(DataError, match="NaN"):
        run_algorithm("pc-fisherz", corrupted, names)


# ---- failures are results ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ges", "direct-lingam", "grasp", "boss"])
def test_collinear_columns_give_an_error_result(name):
    rng = np.random.default_rng(13)
    a, b = rng.normal(size=200), rng.normal(size=200)
    data = np.column_stack([a, b, a - 2 * b, rng.normal(size=200)])
    result = run_algorithm(name, data, ["A", "B", "C", "D"])
    assert not result.ok
    assert result.graph is None
    assert "singular" in result.error
    assert result.full_graph(["A", "B", "C", "D"]) is None
    restored = AlgorithmResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert restored.error == result.error and restored.graph is None


def test_a_runner_that_raises_gives_an_error_result(scratch_registry, small_instance):
    data, names, _ = small_instance

    def broken(data, names, params, seed):
        raise np.linalg.LinAlgError("matrix is not positive definite")

    register_algorithm(AlgorithmSpec("broken", "always fails", GraphType.DAG, {}, broken))
    result = run_algorithm("broken", data, names)
    assert not result.ok
    assert result.error == "LinAlgError: matrix is not positive definite"


def test_an_output_of_the_wrong_type_is_an_error_result(scratch_registry, small_instance):
    data, names, _ = small_instance

    def cyclic(data, names, params, seed):
        graph = Graph(names)
        graph.add_directed(names[0], names[1])
        graph.add_directed(names[1], names[2])
        graph.add_directed(names[2], names[0])
        return graph, {}

    register_algorithm(AlgorithmSpec("cyclic", "returns a cycle", GraphType.DAG, {}, cyclic))
    result = run_algorithm("cyclic", data, names)
    assert not result.ok and "directed cycle" in result.error


def test_warnings_are_kept_in_extras(scratch_registry, small_instance):
    data, names, _ = small_instance

    def noisy(data, names, params, seed):
        warnings.warn("step size shrank", RuntimeWarning, stacklevel=1)
        return Graph(names), {}

    register_algorithm(AlgorithmSpec("noisy", "warns", GraphType.DAG, {}, noisy))
    result = run_algorithm("noisy", data, names)
    assert result.ok
    assert result.extras["warnings"] == ["RuntimeWarning: step size shrank"]


# ---- serialization and seeds ----------------------------------------------------------------------


def test_results_round_trip_through_json(small_instance):
    data, names, _ = small_instance
    for name in ("pc-fisherz", "direct-lingam"):
        result = run_algorithm(name, data, names, params={} if name != "pc-fisherz"
                               else {"alpha": 0.1}, variables=names[:4])
        restored = AlgorithmResult.from_dict(json.loads(json.dumps(result.to_dict())))
        assert restored.graph == result.graph
        assert restored.params == result.params
        assert restored.variables == result.variables
        assert restored.extras == json.loads(json.dumps(result.to_dict()))["extras"]
        unpickled = pickle.loads(pickle.dumps(result))  # the tools cache results pickled
        assert unpickled.graph == result.graph and unpickled.extras == result.extras


def test_notears_that_stops_early_still_returns_a_dag_with_a_warning(small_instance):
    data, names, _ = small_instance
    result = run_algorithm("notears", data, names, params={"max_iter": 1})
    assert result.ok and result.graph.is_dag()
    assert result.extras["converged"] is False and result.extras["n_dual_steps"] == 1
    assert any("NOTEARS stopped" in w for w in result.extras["warnings"])


def test_notears_mlp_is_reproducible_for_a_seed(small_instance):
    data, names, _ = small_instance
    params = {"max_iter": 2}
    first = run_algorithm("notears-mlp", data, names, params=params, seed=4)
    second = run_algorithm("notears-mlp", data, names, params=params, seed=4)
    assert first.graph == second.graph
    assert first.extras["edges"] == second.extras["edges"]


# ---- bad input --------------------------------------------------------------------------------------


def test_bad_input_raises_before_running(small_instance):
    data, names, _ = small_instance
    with pytest.raises(HeuresisError, match="accepted: alpha, max_depth, orientation, variant"):
        run_algorithm("pc-fisherz", data, names, params={"alpah": 0.1})
    with pytest.raises(HeuresisError, match=r"open interval \(0, 1\)"):
        run_algorithm("pc-fisherz", data, names, params={"alpha": 1.5})
    with pytest.raises(HeuresisError, match="'fisherz', 'kci'"):
        run_algorithm("fci", data, names, params={"test": "gsq"})
    with pytest.raises(HeuresisError, match="integer"):
        run_algorithm("notears", data, names, params={"max_iter": 2.5})
    with pytest.raises(UnknownNameError, match="X9"):
        run_algorithm("ges", data, names, variables=["X1", "X9"])
    with pytest.raises(HeuresisError, match="at least 2"):
        run_algorithm("ges", data, names, variables=["X1"])
    with pytest.raises(HeuresisError, match="repeated"):
        run_algorithm("ges", data, names, variables=["X1", "X2", "X1"])
    with pytest.raises(HeuresisError, match="not one string"):
        run_algorithm("ges", data, names, variables="X1")
    with pytest.raises(DataError, match="names given"):
        run_algorithm("ges", data, names[:4])
    with pytest.raises(HeuresisError, match="unique"):
        run_algorithm("ges", data, ["A", "A", "B", "C", "D"])
    with pytest.raises(HeuresisError, match="seed"):
        run_algorithm("ges", data, names, seed=-1)
    with pytest.raises(DataError, match="2-D"):
        run_algorithm("ges", data[:, 0], names)
    nan_data = data.copy()
    nan_data[5, 2] = np.nan
    with pytest.raises(DataError, match="NaN"):
        run_algorithm("ges", nan_data, names)
    constant = data.copy()
    constant[:, 3] = 1.0
    with pytest.raises(DataError, match="constant"):
        run_algorithm("notears", constant, names)


# ---- causal-learn graph conversion --------------------------------------------------------------------


def test_causal_learn_endpoints_convert_to_our_marks():
    from causallearn.graph.Edge import Edge
    from causallearn.graph.Endpoint import Endpoint
    from causallearn.graph.GeneralGraph import GeneralGraph
    from causallearn.graph.GraphNode import GraphNode

    nodes = {name: GraphNode(name) for name in "ABCDE"}
    general = GeneralGraph(list(nodes.values()))
    general.add_edge(Edge(nodes["A"], nodes["B"], Endpoint.TAIL, Endpoint.ARROW))  # A --> B
    general.add_edge(Edge(nodes["B"], nodes["C"], Endpoint.TAIL, Endpoint.TAIL))  # B --- C
    general.add_edge(Edge(nodes["C"], nodes["D"], Endpoint.ARROW, Endpoint.ARROW))  # C <-> D
    general.add_edge(Edge(nodes["E"], nodes["D"], Endpoint.CIRCLE, Endpoint.ARROW))  # E o-> D
    general.add_edge(Edge(nodes["A"], nodes["E"], Endpoint.CIRCLE, Endpoint.CIRCLE))  # A o-o E
    graph = graph_from_causallearn(general, ["E", "D", "C", "B", "A"])  # another order
    assert graph.names == ("E", "D", "C", "B", "A")
    assert str(graph.edge("A", "B")) == "A --> B"
    assert str(graph.edge("B", "A")) == "B <-- A"
    assert graph.edge("B", "C").is_undirected
    assert str(graph.edge("C", "D")) == "C <-> D"
    assert str(graph.edge("E", "D")) == "E o-> D"
    assert str(graph.edge("A", "E")) == "A o-o E"
    assert graph.n_edges() == 5
    with pytest.raises(Exception, match="do not match"):
        graph_from_causallearn(general, ["A", "B", "C", "D", "F"])
