"""The exact truth of every question kind on hand-built DAGs and SCMs with known answers."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from heuresis_env.errors import HeuresisError
from heuresis_env.generation.mechanisms import get_mechanism_kind
from heuresis_env.generation.scm import SCM, NodeMechanism, calibrate_scm
from heuresis_env.questions import (
    GraphTarget,
    average_effect,
    graph_scores,
    has_common_cause,
    is_d_separated,
    is_direct_cause,
    latent_projection,
    unshielded_colliders,
)
from heuresis_env.questions.sets import latent_projection_all
from heuresis_env.questions.truth import answer_colliders


def dag_of(d: int, edges: list[tuple[int, int]]) -> np.ndarray:
    dag = np.zeros((d, d), dtype=bool)
    for a, b in edges:
        dag[a, b] = True
    return dag


# a small DAG with every structure: 0 -> 1 -> 2 (chain), 1 <- 3 -> 4 (fork at 3),
# 2 -> 5 <- 4 (collider at 5, unshielded), 5 -> 6 (descendant of the collider), 0 -> 7 <- 2
# with 0 ... 2 not adjacent (collider at 7), and 1 -> 8 <- 2 shielded (1 -> 2)
EDGES = [(0, 1), (1, 2), (3, 1), (3, 4), (2, 5), (4, 5), (5, 6), (0, 7), (2, 7), (1, 8), (2, 8)]
DAG = dag_of(9, EDGES)


@pytest.mark.parametrize("x, y, given, separated", [
    (0, 2, (), False), (0, 2, (1,), True),             # chain
    (1, 4, (), False), (1, 4, (3,), True),             # fork
    (3, 2, (1,), True), (3, 2, (), False),
    (0, 3, (), True), (0, 3, (1,), False),              # collider at 1 opens when conditioned
    (0, 3, (8,), False),                                # ... or a descendant of it (8)
    (2, 4, (3,), True), (2, 4, (3, 5), False),          # 2 - 1 - 3 - 4 is closed at 3 ...
    (2, 4, (1, 5), False), (2, 4, (1,), True),          # but 2 -> 5 <- 4 opens given 5
    (2, 4, (1, 6), False),                              # ... or given its descendant 6
    (6, 0, (5, 1), True), (6, 0, (5,), True),
    (6, 0, (2,), False),  # 2 blocks the chain but opens the collider 1 (2 descends from it)
])
def test_d_separation_on_a_known_dag(x, y, given, separated):
    assert is_d_separated(DAG, x, y, given) is separated
    assert is_d_separated(DAG, y, x, given) is separated


def test_d_separation_refuses_x_in_the_conditioning_set():
    with pytest.raises(HeuresisError, match="distinct"):
        is_d_separated(DAG, 0, 1, (0,))


def test_direct_cause_collider_and_confounding_on_a_known_dag():
    assert is_direct_cause(DAG, 0, 1) and not is_direct_cause(DAG, 1, 0)
    assert not is_direct_cause(DAG, 0, 2)  # only through 1
    assert unshielded_colliders(DAG, 2, 4) == [5]
    assert unshielded_colliders(DAG, 0, 2) == [7]
    assert unshielded_colliders(DAG, 1, 2) == []  # 1 -> 8 <- 2 is shielded by 1 -> 2
    assert unshielded_colliders(DAG, 0, 3) == [1]
    assert unshielded_colliders(DAG, 0, 4) == []
    assert has_common_cause(DAG, 1, 4)      # 1 <- 3 -> 4
    assert has_common_cause(DAG, 2, 4)      # 2 <- 1 <- 3 -> 4
    assert has_common_cause(DAG, 5, 8)      # 5 <- 2 -> 8
    assert not has_common_cause(DAG, 0, 2)  # 0 causes 2; no back door
    assert not has_common_cause(DAG, 0, 3)  # connected only through the collider 1
    assert not has_common_cause(DAG, 1, 3)  # 3 causes 1


def _brute_force_collider(dag: np.ndarray, x: int, y: int) -> bool:
    return not (dag[x, y] or dag[y, x]) and bool(np.any(dag[x] & dag[y]))


def random_dag(rng: np.random.Generator, d: int, p: float = 0.35) -> np.ndarray:
    order = rng.permutation(d)
    dag = np.triu(rng.random((d, d)) < p, 1)
    return dag[np.ix_(order, order)]


def test_d_separation_agrees_with_networkx_on_random_dags():
    rng = np.random.default_rng(0)
    is_d_separator = getattr(nx, "is_d_separator", None) or nx.d_separated
    for _ in range(40):
        d = int(rng.integers(3, 8))
        dag = random_dag(rng, d)
        graph = nx.DiGraph(dag)
        graph.add_nodes_from(range(d))
        for x, y in itertools.combinations(range(d), 2):
            others = [v for v in range(d) if v not in (x, y)]
            given = tuple(v for v in others if rng.random() < 0.3)
            assert is_d_separated(dag, x, y, given) == is_d_separator(graph, {x}, {y},
                                                                      set(given))
            assert bool(unshielded_colliders(dag, x, y)) == _brute_force_collider(dag, x, y)


# ---- graphs ---------------------------------------------------------------------------------------

def test_whole_graph_target_is_the_skeleton_and_v_structures():
    target = latent_projection(DAG, range(9))
    assert np.array_equal(target.adjacent, DAG | DAG.T)
    assert target.colliders == {(2, 5, 4), (0, 7, 2), (0, 1, 3)}
    assert latent_projection_all(DAG).colliders == target.colliders


def test_whole_graph_shortcut_equals_the_enumeration_on_random_dags():
    rng = np.random.default_rng(1)
    for _ in range(25):
        dag = random_dag(rng, int(rng.integers(3, 8)))
        full = latent_projection(dag, range(dag.shape[0]))
        quick = latent_projection_all(dag)
        assert np.array_equal(full.adjacent, quick.adjacent)
        assert full.colliders == quick.colliders


def test_latent_projection_of_known_structures():
    # a latent common cause: 0 <- 1 -> 2 with 1 unobserved: 0 and 2 are adjacent
    fork = dag_of(3, [(1, 0), (1, 2)])
    assert latent_projection(fork, (0, 2)).adjacent[0, 1]
    # a latent mediator: 0 -> 1 -> 2, 1 unobserved: adjacent
    assert latent_projection(dag_of(3, [(0, 1), (1, 2)]), (0, 2)).n_edges == 1
    # a collider 0 -> 1 <- 2 with 1 unobserved: not adjacent
    assert latent_projection(dag_of(3, [(0, 1), (2, 1)]), (0, 2)).n_edges == 0
    # 0 -> 2 <- 1, 2 -> 3; project out 2: 0 and 1 independent, both adjacent to 3, and 3 is
    # a collider between them (0 *-> 3 <-* 1)
    target = latent_projection(dag_of(4, [(0, 2), (1, 2), (2, 3)]), (0, 1, 3))
    assert target.adjacent.astype(int).tolist() == [[0, 0, 1], [0, 0, 1], [1, 1, 0]]
    assert target.colliders == {(0, 2, 1)}  # positions: 0, 1 into 3 (position 2)
    # the same with 2 kept: the chain through 2 makes 3 a non-collider
    kept = latent_projection(dag_of(4, [(0, 2), (1, 2), (2, 3)]), (0, 1, 2, 3))
    assert kept.colliders == {(0, 2, 1)} and not kept.adjacent[0, 3]


def test_middle_nodes_are_in_all_or_none_of_the_separating_sets():
    rng = np.random.default_rng(2)
    for _ in range(30):  # latent_projection raises if an ancestral graph's property failed
        dag = random_dag(rng, int(rng.integers(5, 9)), p=0.4)
        size = int(rng.integers(3, dag.shape[0]))
        latent_projection(dag, tuple(rng.choice(dag.shape[0], size=size, replace=False)))


def test_graph_answers_are_scored_on_adjacencies_and_v_structures():
    dag = dag_of(4, [(0, 2), (1, 2), (2, 3)])  # 0 -> 2 <- 1, 2 -> 3
    target = latent_projection_all(dag)
    cpdag = target.marks()
    assert graph_scores(target, cpdag)["exact"] == 1.0
    # the DAG itself is in the class; a DAG with another v-structure is not
    dag_marks = np.where(dag, 2, 0) + np.where(dag.T, 1, 0)
    assert graph_scores(target, dag_marks)["exact"] == 1.0
    undirected = np.where(target.adjacent, 1, 0)
    scores = graph_scores(target, undirected)
    assert scores["exact"] == 0.0 and scores["skeleton_exact"] == 1.0 and scores["f1"] == 1.0
    missing = undirected.copy()
    missing[2, 3] = missing[3, 2] = 0
    scores = graph_scores(target, missing)
    assert scores["f1"] == pytest.approx(2 * 2 / (2 * 2 + 1)) and scores["recall"] == 2 / 3
    assert answer_colliders(cpdag) == {(0, 2, 1)}


# ---- effects --------------------------------------------------------------------------------------

def linear_scm(weights: dict[tuple[str, str], float], names: tuple[str, ...],
               n: int = 4000) -> SCM:
    d = len(names)
    adjacency = np.zeros((d, d), dtype=bool)
    for a, b in weights:
        adjacency[names.index(a), names.index(b)] = True
    mechanisms = []
    for j, name in enumerate(names):
        parents = tuple(names[i] for i in np.flatnonzero(adjacency[:, j]))
        if parents:
            mechanisms.append(NodeMechanism("linear", parents, {
                "weights": [weights[(p, name)] for p in parents], "noise_scale": 1.0}))
        else:
            mechanisms.append(NodeMechanism("root_gaussian", (), {"noise_scale": 1.0}))
    scm = SCM(names, adjacency, tuple(mechanisms))
    return calibrate_scm(scm, n, np.random.default_rng(0))[0]


def test_average_effect_of_a_linear_scm_matches_the_closed_form():
    # Z confounds X and Y; X -> M -> Y and X -> Y: the total effect is w_xy + w_xm * w_my
    names = ("Z", "X", "M", "Y")
    weights = {("Z", "X"): 1.5, ("Z", "Y"): -2.0, ("X", "M"): 0.8, ("M", "Y"): 1.25,
               ("X", "Y"): 0.5}
    scm = linear_scm(weights, names)
    total = 0.5 + 0.8 * 1.25
    sd = dict(zip(names, scm.column_sds))
    for low, high in ((0.0, 1.0), (-1.0, 1.0)):
        truth = average_effect(scm, "X", "Y", low, high, np.random.SeedSequence(3))
        expected = total * sd["X"] / sd["Y"] * (high - low)
        assert truth.converged and truth.value == pytest.approx(expected, rel=1e-9)
        assert truth.standard_error <= 1e-9
    # the effect of Y on X is zero (no directed path), and Z's is the sum over its paths
    assert average_effect(scm, "Y", "X", 0, 1, np.random.SeedSequence(3)).value == 0.0
    z_on_y = average_effect(scm, "Z", "Y", 0, 1, np.random.SeedSequence(3)).value
    assert z_on_y == pytest.approx((-2.0 + 1.5 * total) * sd["Z"] / sd["Y"], rel=1e-9)


def test_average_effect_of_a_non_linear_scm_reaches_its_standard_error():
    names = ("X", "Y")
    adjacency = np.array([[False, True], [False, False]])
    rng = np.random.default_rng(5)
    params = get_mechanism_kind("mlp_hetero").draw_params(1, {}, rng)
    scm = calibrate_scm(SCM(names, adjacency, (
        NodeMechanism("root_gaussian", (), {"noise_scale": 1.0}),
        NodeMechanism("mlp_hetero", ("X",), params))), 2000, np.random.default_rng(1))[0]
    seed = np.random.SeedSequence(11)
    truth = average_effect(scm, "X", "Y", -1.0, 1.0, seed, batch_rows=5000, max_rows=400_000)
    assert truth.converged and truth.standard_error <= 0.01 * abs(truth.value)
    again = average_effect(scm, "X", "Y", -1.0, 1.0, np.random.SeedSequence(11),
                           batch_rows=5000, max_rows=400_000)
    assert again == truth  # deterministic given the seed
    # an independent large sample of do(X = ±1) agrees within a few standard errors
    big = 200_000
    high = scm.sample(big, np.random.default_rng(21), {"X": 1.0})[:, 1].mean()
    low = scm.sample(big, np.random.default_rng(22), {"X": -1.0})[:, 1].mean()
    independent_se = np.sqrt(2 / big)  # the output is standardized: its sd is about 1
    assert abs((high - low) - truth.value) < 4 * (independent_se + truth.standard_error)


def test_graph_target_as_json_and_marks():
    target = GraphTarget((0, 1, 2), np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=bool),
                         frozenset({(0, 1, 2)}))
    assert target.to_dict() == {"variables": [0, 1, 2],
                                "adjacent": [[0, 1, 0], [1, 0, 1], [0, 1, 0]],
                                "colliders": [[0, 1, 2]]}
    assert target.marks().tolist() == [[0, 2, 0], [1, 0, 1], [0, 2, 0]]
