"""Our GES (:mod:`heuresis_env.discovery.ges`) against causal-learn's ``ges``, run side by
side: the same CPDAG, the same score to the last bit and the same operators in the same
order, on instances of every kind the benchmark serves (the six families, BNLearn
structures, a ``max_parents`` limit, a positive and a negative total score), plus the parts
it is built from on graphs with known answers."""

from __future__ import annotations

import numpy as np
import pytest
from causallearn.search.ScoreBased.GES import ges

from heuresis_env.discovery.algorithms import run_algorithm
from heuresis_env.discovery.causallearn_bridge import graph_from_causallearn, silenced_stdout
from heuresis_env.discovery.ges import ges_bic, pdag_to_dag
from heuresis_env.generation import InstanceKey
from heuresis_env.generation.instances import generate_instance
from heuresis_env.graphs import Graph, essential_graph, has_directed_cycle, pdag_to_graph
from tests.test_graphs import random_dag


def _causallearn(data: np.ndarray, max_parents: int | None) -> dict:
    with silenced_stdout():
        return ges(data, score_func="local_score_BIC", maxP=max_parents,
                   parameters={"lambda_value": 0.5})


@pytest.mark.parametrize("family, index, max_parents", [
    ("lg", 0, None), ("anm", 2, None), ("hetero", 1, None), ("wild", 1, None),
    ("mixed", 4, None), ("gauntlet", 5, None), ("lg", 3, 2), ("lg", 7, 1),
    ("bnlearn-sachs", 3, None), ("bnlearn-child", 2, None), ("bnlearn-insurance", 0, 3),
    ("bnlearn-alarm", 0, None),
])
def test_ges_bic_is_causallearns_ges(family, index, max_parents):
    instance = generate_instance(InstanceKey(family, "dev", index))
    data = np.array(instance.X)
    ours = ges_bic(data, max_parents=max_parents)
    theirs = _causallearn(data, max_parents)
    names = instance.names
    assert pdag_to_graph(ours.pdag, names) == graph_from_causallearn(theirs["G"], names)
    assert float(np.ravel(ours.score)[0]) == float(np.ravel(theirs["score"])[0])  # bit for bit
    assert ours.inserts == [(int(i), int(j), tuple(int(x) for x in t))
                            for i, j, t in theirs["update1"]]
    assert ours.deletes == [(int(i), int(j), tuple(int(x) for x in h))
                            for i, j, h in theirs["update2"]]
    assert ours.inserts, "a search that inserts nothing tests nothing"


@pytest.mark.parametrize("seed", range(12))
def test_ges_bic_is_causallearns_ges_on_dense_graphs_with_few_rows(seed):
    """Dense DAGs and few rows: large neighbourhoods, so many subsets T and H per pair, and
    CPDAGs with wide undirected parts — where the validity conditions matter most."""
    rng = np.random.default_rng(seed)
    d, n = 9, int(rng.integers(40, 200))
    weights = np.triu(rng.uniform(0.5, 1.5, (d, d)) * rng.choice([-1, 1], (d, d))
                      * (rng.random((d, d)) < 0.6), 1)
    data = rng.normal(size=(n, d))
    for k in range(d):
        data[:, k] += data @ weights[:, k]
    ours = ges_bic(data)
    theirs = _causallearn(data, None)
    names = [f"X{k + 1}" for k in range(d)]
    assert pdag_to_graph(ours.pdag, names) == graph_from_causallearn(theirs["G"], names)
    assert float(np.ravel(ours.score)[0]) == float(np.ravel(theirs["score"])[0])
    assert ours.inserts == [(int(i), int(j), tuple(int(x) for x in t))
                            for i, j, t in theirs["update1"]]
    assert ours.deletes == [(int(i), int(j), tuple(int(x) for x in h))
                            for i, j, h in theirs["update2"]]


def test_the_registered_algorithm_runs_either_implementation_with_one_result():
    instance = generate_instance(InstanceKey("bnlearn-asia", "dev", 0))
    ours = run_algorithm("ges", instance.X, instance.names, seed=0)
    theirs = run_algorithm("ges", instance.X, instance.names,
                           params={"implementation": "causal-learn"}, seed=0)
    assert ours.graph == theirs.graph
    assert ours.extras["score"] == theirs.extras["score"]
    with pytest.raises(Exception, match="implementation"):
        run_algorithm("ges", instance.X, instance.names, params={"implementation": "r"}, seed=0)


def test_ges_recovers_a_collider_from_plenty_of_linear_gaussian_data():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 5000))
    c = a + b + 0.5 * rng.normal(size=5000)
    result = ges_bic(np.column_stack([a, b, c]))
    expected = Graph.from_edges(["a", "b", "c"], [("a", "c"), ("b", "c")])
    assert pdag_to_graph(result.pdag, ["a", "b", "c"]) == expected


def test_pdag_to_dag_extends_without_new_v_structures_or_cycles():
    rng = np.random.default_rng(1)
    for _ in range(200):
        dag = random_dag(rng, int(rng.integers(3, 9)), 0.35)
        cpdag = essential_graph(dag)
        extension = pdag_to_dag(cpdag)
        assert not (extension & extension.T).any()
        assert (extension | extension.T).sum() == (dag | dag.T).sum()
        assert not has_directed_cycle(extension)
        # directed edges of the CPDAG are kept; the extension is in the same class
        assert (extension >= (cpdag & ~cpdag.T)).all()
        assert (essential_graph(extension) == cpdag).all()
