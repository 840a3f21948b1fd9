"""Graphs with edge marks: validation, text, serialization, and DAG → CPDAG correctness.

The CPDAG is checked three independent ways: against hand-derived examples of Meek's rules,
against causal-learn's ``dag2cpdag`` (a different algorithm, Chickering's edge labelling),
and against brute-force enumeration of the Markov equivalence class on small graphs.
"""

from __future__ import annotations

import itertools
import json

import networkx as nx
import numpy as np
import pytest
from causallearn.graph.Dag import Dag
from causallearn.graph.GraphNode import GraphNode
from causallearn.utils.DAG2CPDAG import dag2cpdag
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.graphs import (
    Edge,
    EdgeMark,
    Graph,
    GraphError,
    GraphType,
    apply_meek_rules,
    cpdag_from_dag,
    has_directed_cycle,
    orient_v_structures,
    pdag_to_graph,
    topological_order,
)

T, A, C, N = EdgeMark.TAIL, EdgeMark.ARROW, EdgeMark.CIRCLE, EdgeMark.NONE
PROPERTY_SETTINGS = settings(max_examples=60, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow])


def names_of(d: int) -> list[str]:
    return [f"X{i + 1}" for i in range(d)]


def adjacency_from_edges(d: int, edges: list[tuple[int, int]]) -> np.ndarray:
    adjacency = np.zeros((d, d), dtype=bool)
    for i, j in edges:
        adjacency[i, j] = True
    return adjacency


# ---- random DAGs ------------------------------------------------------------------------------

@st.composite
def dag_adjacencies(draw, min_d: int = 2, max_d: int = 6, max_edges: int | None = None):
    """A random DAG: a random causal order and a random subset of the forward pairs."""
    d = draw(st.integers(min_d, max_d))
    order = draw(st.permutations(range(d)))
    pairs = [(order[i], order[j]) for i in range(d) for j in range(i + 1, d)]
    chosen = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    edges = [pair for pair, on in zip(pairs, chosen) if on]
    if max_edges is not None:
        edges = edges[:max_edges]
    return adjacency_from_edges(d, edges)


def random_dag(rng: np.random.Generator, d: int, edge_probability: float) -> np.ndarray:
    """Erdős–Rényi DAG over a uniformly random causal order."""
    order = rng.permutation(d)
    upper = np.triu(rng.random((d, d)) < edge_probability, k=1)
    adjacency = np.zeros((d, d), dtype=bool)
    adjacency[np.ix_(order, order)] = upper
    return adjacency


# ---- independent references -------------------------------------------------------------------

def v_structures(adjacency: np.ndarray) -> set[tuple[int, int, int]]:
    """Unshielded colliders (i, k, j) with i < j: i → k ← j and i, j non-adjacent."""
    skeleton = adjacency | adjacency.T
    found = set()
    for k in range(adjacency.shape[0]):
        for i, j in itertools.combinations(np.nonzero(adjacency[:, k])[0], 2):
            if not skeleton[i, j]:
                found.add((int(i), k, int(j)))
    return found


def markov_equivalence_class(adjacency: np.ndarray,
                             required: set[tuple[int, int]] = frozenset()) -> list[np.ndarray]:
    """Every DAG with the skeleton and v-structures of ``adjacency`` (brute force over
    orientations), keeping only those that contain every directed edge in ``required``."""
    d = adjacency.shape[0]
    pairs = [(int(i), int(j)) for i, j in zip(*np.nonzero(np.triu(adjacency | adjacency.T)))]
    target = v_structures(adjacency)
    members = []
    for directions in itertools.product((False, True), repeat=len(pairs)):
        candidate = np.zeros((d, d), dtype=bool)
        for (i, j), flip in zip(pairs, directions):
            if flip:
                candidate[j, i] = True
            else:
                candidate[i, j] = True
        if any(not candidate[i, j] for i, j in required):
            continue
        if has_directed_cycle(candidate) or v_structures(candidate) != target:
            continue
        members.append(candidate)
    return members


def common_orientation_graph(members: list[np.ndarray], names: list[str]) -> Graph:
    """Edges directed where every member agrees, undirected where members disagree."""
    stack = np.stack(members)
    always = stack.all(axis=0)
    ever = stack.any(axis=0)
    undirected = ever & ever.T & ~always & ~always.T
    return Graph.from_cpdag_matrix(always, undirected, names)


def causallearn_cpdag(adjacency: np.ndarray, names: list[str]) -> Graph:
    """causal-learn's dag2cpdag, converted back to our marks."""
    nodes = [GraphNode(name) for name in names]
    dag = Dag(nodes)
    for i, j in zip(*np.nonzero(adjacency)):
        dag.add_directed_edge(nodes[i], nodes[j])
    general = dag2cpdag(dag)
    decode = {-1: T, 1: A, 2: C}
    d = len(names)
    marks = np.zeros((d, d), dtype=np.int8)
    for i in range(d):
        for j in range(d):
            if i != j and general.graph[i, j] != 0:
                marks[j, i] = decode[int(general.graph[i, j])]  # graph[i, j]: mark at i's end
    return Graph(names, marks)


def true_separating_sets(adjacency: np.ndarray) -> dict[frozenset[int], set[int]]:
    """pa(i) ∪ pa(j) for every non-adjacent pair: a valid d-separating set in any DAG."""
    d = adjacency.shape[0]
    skeleton = adjacency | adjacency.T
    return {
        frozenset((i, j)): set(np.nonzero(adjacency[:, i])[0]) | set(np.nonzero(adjacency[:, j])[0])
        for i, j in itertools.combinations(range(d), 2) if not skeleton[i, j]
    }


# ---- validation -------------------------------------------------------------------------------

def test_duplicate_names_are_rejected():
    with pytest.raises(GraphError, match="duplicate"):
        Graph(["X1", "X2", "X1"])


@pytest.mark.parametrize("build", [
    lambda: Graph(["a", "b"], np.array([[2, 0], [0, 0]])),
    lambda: Graph.from_dag(np.eye(2), ["a", "b"]),
    lambda: Graph(["a", "b"]).add_directed("a", "a"),
])
def test_self_loops_are_rejected(build):
    with pytest.raises(GraphError, match="self-loop"):
        build()


def test_a_mark_at_one_end_only_is_rejected():
    with pytest.raises(GraphError, match="both ends"):
        Graph(["a", "b"], np.array([[0, 2], [0, 0]]))
    with pytest.raises(GraphError, match="both ends"):
        Graph(["a", "b"]).set_edge("a", "b", T, N)


@pytest.mark.parametrize("bad", [258, -1, 4, 1.5])
def test_marks_outside_the_enum_are_rejected_before_any_cast(bad):
    with pytest.raises(GraphError, match="not one of"):
        Graph(["a", "b"], np.array([[0, bad], [bad, 0]]))
    with pytest.raises(GraphError, match="not one of"):
        Graph(["a", "b"]).set_edge("a", "b", bad, bad)


def test_wrong_shapes_are_rejected():
    with pytest.raises(GraphError, match="shape"):
        Graph(["a", "b"], np.zeros((3, 3)))
    with pytest.raises(GraphError, match="square"):
        Graph.from_dag(np.zeros((2, 3)), ["a", "b"])


def test_unknown_variable_names_the_known_ones():
    graph = Graph(["X1", "X2", "X3"])
    with pytest.raises(UnknownNameError) as raised:
        graph.add_directed("X1", "X4")
    message = str(raised.value)
    assert "X4" in message and "X1, X2, X3" in message
    assert isinstance(raised.value, HeuresisError) and isinstance(raised.value, KeyError)


def test_both_directions_in_a_dag_matrix_are_rejected():
    with pytest.raises(GraphError, match="both"):
        Graph.from_dag(np.array([[0, 1], [1, 0]]), ["a", "b"])


def test_cpdag_from_dag_refuses_cycles_and_non_dags():
    cycle = adjacency_from_edges(3, [(0, 1), (1, 2), (2, 0)])
    with pytest.raises(GraphError, match="cycle"):
        cpdag_from_dag(cycle)
    with pytest.raises(GraphError, match="needs a DAG"):
        cpdag_from_dag(Graph.from_edges(["a", "b"], [("a", "b")], directed=False))
    with pytest.raises(GraphError, match="needs a DAG"):
        cpdag_from_dag(Graph.from_dag(cycle, names_of(3)))


def test_from_dict_names_missing_keys():
    with pytest.raises(GraphError, match="marks"):
        Graph.from_dict({"names": ["a"]})


def test_the_empty_graph_over_no_variables_is_valid():
    graph = Graph([])
    assert graph.d == 0 and graph.n_edges() == 0 and graph.to_text() == "(no edges)"


def test_a_graph_owns_its_mark_matrix():
    marks = np.array([[0, 2], [1, 0]], dtype=np.int8)
    graph = Graph(["a", "b"], marks)
    marks[0, 1] = 0
    assert graph.marks[0, 1] == A and graph.copy() == graph and graph.copy() is not graph


# ---- access, text, serialization --------------------------------------------------------------

def test_edge_text_for_every_edge_kind():
    graph = Graph(names_of(6))
    graph.add_directed("X2", "X1")  # tail has the larger index: still written tail first
    graph.add_undirected("X1", "X3")
    graph.set_edge("X3", "X4", A, A)
    graph.set_edge("X4", "X5", C, A)
    graph.set_edge("X5", "X6", C, C)
    assert [str(e) for e in graph.edges()] == [
        "X2 --> X1", "X1 --- X3", "X3 <-> X4", "X4 o-> X5", "X5 o-o X6"]
    assert graph.to_text().splitlines() == [str(e) for e in graph.edges()]
    assert graph.edge("X1", "X2") == Edge("X1", "X2", A, T)
    assert graph.edge("X1", "X6") is None
    assert Graph(names_of(3)).to_text() == "(no edges)"
    assert graph.graph_type() == GraphType.PAG


def test_graph_types_and_queries():
    dag = Graph.from_edges(names_of(3), [("X1", "X2"), ("X3", "X2")])
    assert dag.graph_type() == GraphType.DAG and dag.is_dag()
    assert dag.parents("X2") == ["X1", "X3"] and dag.children("X1") == ["X2"]
    assert sorted(dag.neighbors("X2")) == ["X1", "X3"]
    pdag = dag.copy()
    pdag.add_undirected("X1", "X3")
    assert pdag.graph_type() == GraphType.CPDAG and not pdag.is_dag()
    cyclic = Graph.from_edges(names_of(3), [("X1", "X2"), ("X2", "X3"), ("X3", "X1")])
    assert cyclic.graph_type() == GraphType.DAG and not cyclic.is_dag()
    with pytest.raises(GraphError, match="cycle"):
        topological_order(cyclic.directed_adjacency())
    sub = dag.restricted(["X2", "X1"])
    assert sub.names == ("X2", "X1") and [str(e) for e in sub.edges()] == ["X1 --> X2"]


@PROPERTY_SETTINGS
@given(dag_adjacencies(max_d=8))
def test_topological_order_respects_every_edge(adjacency):
    position = {node: rank for rank, node in enumerate(topological_order(adjacency))}
    assert all(position[i] < position[j] for i, j in zip(*np.nonzero(adjacency)))
    assert not has_directed_cycle(adjacency)


@st.composite
def mixed_graphs(draw, max_d: int = 6):
    d = draw(st.integers(1, max_d))
    end_marks = st.sampled_from([T, A, C])
    marks = np.zeros((d, d), dtype=np.int8)
    for i, j in itertools.combinations(range(d), 2):
        if draw(st.booleans()):
            marks[i, j], marks[j, i] = draw(end_marks), draw(end_marks)
    return Graph(draw(st.permutations(names_of(d))), marks)


@PROPERTY_SETTINGS
@given(mixed_graphs())
def test_dict_round_trip_through_json(graph):
    restored = Graph.from_dict(json.loads(json.dumps(graph.to_dict())))
    assert restored == graph and hash(restored) == hash(graph)
    assert restored.to_text() == graph.to_text()
    rebuilt = Graph.from_edges(graph.names, graph.edges())
    assert rebuilt == graph


# ---- CPDAGs of known DAGs and Meek's rules ----------------------------------------------------

def cpdag_text(d: int, edges: list[tuple[int, int]]) -> list[str]:
    return sorted(str(e) for e in cpdag_from_dag(adjacency_from_edges(d, edges)).edges())


def test_chain_and_fork_are_fully_undirected():
    assert cpdag_text(3, [(0, 1), (1, 2)]) == ["X1 --- X2", "X2 --- X3"]
    assert cpdag_text(3, [(1, 0), (1, 2)]) == ["X1 --- X2", "X2 --- X3"]


def test_collider_is_directed():
    assert cpdag_text(3, [(0, 2), (1, 2)]) == ["X1 --> X3", "X2 --> X3"]


def test_shielded_collider_is_undirected():
    assert cpdag_text(3, [(0, 2), (1, 2), (0, 1)]) == ["X1 --- X2", "X1 --- X3", "X2 --- X3"]


def test_meek_rule_1_propagates_a_collider_downstream():
    # X1 → X3 ← X2 is a v-structure; X3 — X4 with X1, X4 non-adjacent ⇒ X3 → X4 (and on to X5)
    assert cpdag_text(5, [(0, 2), (1, 2), (2, 3), (3, 4)]) == [
        "X1 --> X3", "X2 --> X3", "X3 --> X4", "X4 --> X5"]


def test_meek_rule_2_avoids_a_cycle():
    # R1 gives X3 → X4; then X1 → X3 → X4 with X1 — X4 ⇒ X1 → X4
    assert cpdag_text(4, [(0, 2), (1, 2), (2, 3), (0, 3)]) == [
        "X1 --> X3", "X1 --> X4", "X2 --> X3", "X3 --> X4"]


def test_meek_rule_3_two_colliding_paths():
    # a=X1 — c1=X2 → b=X4 ← c2=X3 — X1, X2/X3 non-adjacent, X1 — X4 ⇒ X1 → X4
    assert cpdag_text(4, [(0, 1), (0, 2), (1, 3), (2, 3), (0, 3)]) == [
        "X1 --- X2", "X1 --- X3", "X1 --> X4", "X2 --> X4", "X3 --> X4"]


def pdag(d: int, directed: list[tuple[int, int]], undirected: list[tuple[int, int]]) -> np.ndarray:
    matrix = adjacency_from_edges(d, directed)
    for i, j in undirected:
        matrix[i, j] = matrix[j, i] = True
    return matrix


def oriented_text(matrix: np.ndarray) -> list[str]:
    return sorted(str(e) for e in pdag_to_graph(apply_meek_rules(matrix), names_of(len(matrix))).edges())


def test_each_meek_rule_on_its_minimal_pdag():
    # R1: X3 → X1 — X2, X3 and X2 non-adjacent ⇒ X1 → X2
    assert oriented_text(pdag(3, [(2, 0)], [(0, 1)])) == ["X1 --> X2", "X3 --> X1"]
    # R2: X1 → X3 → X2 and X1 — X2 ⇒ X1 → X2
    assert oriented_text(pdag(3, [(0, 2), (2, 1)], [(0, 1)])) == [
        "X1 --> X2", "X1 --> X3", "X3 --> X2"]
    # R3: X1 — X3 → X2, X1 — X4 → X2, X3/X4 non-adjacent, X1 — X2 ⇒ X1 → X2
    assert oriented_text(pdag(4, [(2, 1), (3, 1)], [(0, 2), (0, 3), (0, 1)])) == [
        "X1 --- X3", "X1 --- X4", "X1 --> X2", "X3 --> X2", "X4 --> X2"]
    # R4: X1 — X3 → X4 → X2, X3/X2 non-adjacent, X1 — X4, X1 — X2 ⇒ X1 → X2 (R1–R3 cannot)
    assert oriented_text(pdag(4, [(2, 3), (3, 1)], [(0, 2), (0, 3), (0, 1)])) == [
        "X1 --- X3", "X1 --- X4", "X1 --> X2", "X3 --> X4", "X4 --> X2"]
    # nothing to do: an undirected chain stays undirected
    assert oriented_text(pdag(3, [], [(0, 1), (1, 2)])) == ["X1 --- X2", "X2 --- X3"]


# ---- CPDAG agreement with causal-learn and with the equivalence class -------------------------

def test_cpdag_agrees_with_causallearn_dag2cpdag_on_random_dags():
    rng = np.random.default_rng(20240611)
    compared = directed_seen = undirected_seen = 0
    for d, edge_probability, repeats in [(3, 0.6, 30), (5, 0.4, 60), (8, 0.3, 60),
                                         (10, 2 / 9, 40), (10, 0.45, 20), (15, 0.15, 10)]:
        for _ in range(repeats):
            adjacency = random_dag(rng, d, edge_probability)
            ours = cpdag_from_dag(adjacency)
            theirs = causallearn_cpdag(adjacency, names_of(d))
            assert ours == theirs, (adjacency.astype(int), ours.to_text(), theirs.to_text())
            compared += 1
            directed_seen += int(ours.directed_adjacency().sum())
            undirected_seen += int(np.triu(ours.undirected_adjacency()).sum())
    assert compared == 220 and directed_seen > 100 and undirected_seen > 100


@PROPERTY_SETTINGS
@given(dag_adjacencies(max_d=6, max_edges=9))
def test_every_member_of_the_equivalence_class_has_the_same_cpdag(adjacency):
    names = names_of(adjacency.shape[0])
    cpdag = cpdag_from_dag(adjacency, names)
    members = markov_equivalence_class(adjacency)
    assert any(np.array_equal(member, adjacency) for member in members)
    for member in members:
        assert cpdag_from_dag(member, names) == cpdag
    # completeness: directed exactly where the whole class agrees
    assert cpdag == common_orientation_graph(members, names)


def test_meek_rules_with_background_orientations_are_sound_and_complete():
    """Meek (1995), Thm 4: R1–R4 on a pattern plus consistent background orientations give
    exactly the edges directed in every DAG of the class that honours the background. Dense
    graphs, so that R4 configurations (rare in a plain CPDAG, where R4 never fires) occur."""
    rng = np.random.default_rng(1995)
    checked = oriented_by_rules = 0
    for _ in range(400):
        d = int(rng.integers(4, 7))
        adjacency = random_dag(rng, d, float(rng.uniform(0.4, 0.9)))
        names = names_of(d)
        cpdag = cpdag_from_dag(adjacency, names)
        if np.triu(cpdag.undirected_adjacency()).sum() > 10:
            continue  # keep the brute force below 2^10 orientations
        matrix = cpdag.undirected_adjacency() | cpdag.directed_adjacency()
        background = set()
        for i, j in zip(*np.nonzero(np.triu(cpdag.undirected_adjacency()))):
            if rng.random() < 0.3:
                i, j = (int(i), int(j)) if adjacency[i, j] else (int(j), int(i))
                matrix[j, i] = False  # orient i → j as in the true DAG
                background.add((i, j))
        closed = apply_meek_rules(matrix)
        members = markov_equivalence_class(adjacency, required=background)
        assert pdag_to_graph(closed, names) == common_orientation_graph(members, names)
        checked += 1
        oriented_by_rules += int(np.count_nonzero(closed & ~closed.T)
                                 > np.count_nonzero(matrix & ~matrix.T))
    assert checked > 250 and oriented_by_rules > 50


@PROPERTY_SETTINGS
@given(dag_adjacencies(max_d=7))
def test_v_structures_and_meek_with_true_separating_sets_recover_the_cpdag(adjacency):
    d = adjacency.shape[0]
    separating_sets = true_separating_sets(adjacency)
    network = nx.DiGraph()
    network.add_nodes_from(range(d))
    network.add_edges_from(zip(*np.nonzero(adjacency)))
    for pair, separating_set in separating_sets.items():
        i, j = sorted(pair)
        assert nx.is_d_separator(network, {i}, {j}, separating_set)
    skeleton = adjacency | adjacency.T
    pattern = orient_v_structures(skeleton, separating_sets)
    recovered = pdag_to_graph(apply_meek_rules(pattern), names_of(d))
    assert recovered == cpdag_from_dag(adjacency)


def test_minimal_separating_sets_give_the_same_cpdag():
    """A different valid separator (networkx's minimal one) must orient the same edges."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        d = int(rng.integers(3, 9))
        adjacency = random_dag(rng, d, 0.35)
        network = nx.DiGraph()
        network.add_nodes_from(range(d))
        network.add_edges_from(zip(*np.nonzero(adjacency)))
        skeleton = adjacency | adjacency.T
        separating_sets = {
            frozenset((i, j)): nx.find_minimal_d_separator(network, {i}, {j})
            for i, j in itertools.combinations(range(d), 2) if not skeleton[i, j]
        }
        pattern = orient_v_structures(skeleton, separating_sets)
        assert pdag_to_graph(apply_meek_rules(pattern), names_of(d)) == cpdag_from_dag(adjacency)


def test_cpdag_of_a_graph_keeps_its_names():
    graph = Graph.from_edges(["B", "A", "C"], [("B", "C"), ("A", "C")])
    cpdag = cpdag_from_dag(graph)
    assert cpdag.names == ("B", "A", "C")
    assert sorted(str(e) for e in cpdag.edges()) == ["A --> C", "B --> C"]
