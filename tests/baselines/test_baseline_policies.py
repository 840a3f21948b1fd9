"""The reference baselines as policies: each runs through ``run_episode`` on a small instance
and scores what the baseline's own computation scores."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import heuresis_env  # noqa: F401  (registers the environments)
from baselines.merges import merge_k
from baselines.oracle import ideal_oracle
from baselines.policies import (
    SHIPPED_SELECTIONS,
    AlgorithmPolicy,
    BCAPolicy,
    MergePolicy,
    OraclePolicy,
    edge_strings,
    load_bca_selection,
    selection_size,
    shipped_selection,
)
from heuresis_env.discovery.algorithms import run_algorithm
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.evaluation.policies import make_policy
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.graphs import EdgeMark, Graph
from heuresis_env.metrics import score_graph
from heuresis_env.policy import run_episode
from heuresis_env.seeding import int31_seed

#: a strong test salt (a random token, as `heuresis salt` prints it)
SECRET = "27f4f9a7f895926166188b8625c10b2b9c95f4fc6fe6dac6fe6bd13b5187e0e8"

D, N = 5, 200


def make_env(family: str = "lg", **kwargs):
    return gym.make(f"Heuresis-{family}-v0", d=D, n=N, **kwargs)


def instance_of(family: str = "lg", index: int = 0, split: str = "dev", salt=None):
    return generate_instance(InstanceKey(family, split, index, d=D, n=N), salt)


def tool_run(instance, name: str, params=None):
    """run_algorithm as the tool calls it (same seed), outside any episode."""
    return run_algorithm(name, instance.X, instance.names, params=params,
                         seed=int31_seed(instance.sha256))


@pytest.mark.parametrize("name", ["pc-fisherz", "ges", "direct-lingam"])
def test_algorithm_policy_scores_the_algorithms_graph(name):
    instance = instance_of("lg", 0)
    expected = score_graph(tool_run(instance, name).graph, instance.record.dag)
    result = run_episode(make_env("lg"), AlgorithmPolicy(name), seed=0, options={"index": 0})
    assert result.termination_reason == "submitted" and result.steps == 2
    assert result.policy == name
    for key in ("f1", "precision", "recall", "shd", "shd_cpdag", "n_edges"):
        assert result.scores[key] == pytest.approx(expected[key], nan_ok=True)


def test_edge_strings_cover_the_marks_submit_reads():
    graph = Graph(["A", "B", "C", "D"])
    graph.set_edge("A", "B", EdgeMark.CIRCLE, EdgeMark.ARROW)
    graph.set_edge("B", "C", EdgeMark.ARROW, EdgeMark.CIRCLE)
    graph.add_directed("D", "A")
    graph.set_edge("C", "D", EdgeMark.ARROW, EdgeMark.ARROW)
    assert edge_strings(graph) == ["A o-> B", "D --> A", "B <-o C", "C <-> D"]
    graph.set_edge("A", "B", EdgeMark.CIRCLE, EdgeMark.TAIL)  # no edge string for o--
    assert edge_strings(graph) is None


def test_algorithm_policy_loads_an_output_too_long_for_an_edge_list():
    """Over 512 edges cannot go in one action: the policy loads the saved output instead."""
    d, params = 34, {"alpha": 0.99, "max_depth": 0}
    env = gym.make("Heuresis-lg-v0", d=d, n=60)
    instance = generate_instance(InstanceKey("lg", "dev", 0, d=d, n=60))
    output = tool_run(instance, "pc-fisherz", params).graph
    assert output.n_edges() > 512
    result = run_episode(env, AlgorithmPolicy("pc-fisherz", params), seed=0,
                         options={"index": 0})
    assert result.termination_reason == "submitted" and result.steps == 3
    assert Graph.from_dict(result.final_graph) == output


def test_algorithm_policy_checks_its_options():
    with pytest.raises(UnknownNameError, match="pc-kci"):
        AlgorithmPolicy("pc-kcii")
    with pytest.raises(HeuresisError, match="alpha"):
        AlgorithmPolicy("pc-fisherz", {"alpha": 2.0})
    policy = make_policy("baselines.policies:algorithm_policy",
                         {"name": "ges", "params": {"lambda_value": 1.0}})
    assert isinstance(policy, AlgorithmPolicy) and policy.params == {"lambda_value": 1.0}


def test_oracle_policy_is_the_ideal_oracle():
    instance = instance_of("wild", 0)
    oracle = score_graph(ideal_oracle(instance), instance.record.dag)
    env = make_env("wild")
    result = run_episode(env, OraclePolicy(), seed=0, options={"index": 0})
    pc_kci = run_episode(env, AlgorithmPolicy("pc-kci"), seed=0, options={"index": 0})
    assert result.steps == 1 and result.termination_reason == "submitted"
    assert result.scores["f1"] == pytest.approx(oracle["f1"])
    assert result.scores["shd"] == oracle["shd"]
    # every pair PC-KCI lacks was deleted, so restoring the true ones recovers every edge
    assert result.scores["recall"] == 1.0 >= pc_kci.scores["recall"]
    assert result.scores["precision"] >= pc_kci.scores["precision"]
    assert result.scores["f1"] >= pc_kci.scores["f1"]


def test_oracle_policy_on_a_sealed_test_split():
    env = make_env("lg", split="test", salt=SECRET)
    with pytest.raises(HeuresisError, match="salt"):
        run_episode(env, OraclePolicy(), seed=0, options={"index": 0})
    sealed = instance_of("lg", 0, split="test", salt=SECRET)
    expected = score_graph(ideal_oracle(sealed), sealed.record.dag)
    result = run_episode(env, OraclePolicy(salt=SECRET), seed=0,
                         options={"index": 0})
    assert result.scores["f1"] == pytest.approx(expected["f1"])


def test_merge_policy_submits_merge_k_of_the_tool_outputs():
    algorithms = ["pc-fisherz", "ges", "direct-lingam"]
    instance = instance_of("lg", 2)
    graphs = [tool_run(instance, name).graph for name in algorithms]
    for k in (1, 2, 3):
        expected = score_graph(merge_k(graphs, k), instance.record.dag)
        policy = MergePolicy(algorithms, k)
        result = run_episode(make_env("lg"), policy, seed=0, options={"index": 2})
        assert result.steps == len(algorithms) + 1 and result.policy == f"merge-{k}"
        assert result.scores["f1"] == pytest.approx(expected["f1"], nan_ok=True)
        assert result.scores["shd"] == expected["shd"]
    # two steps only: one algorithm, then its output (k clipped to 1)
    result = run_episode(make_env("lg", max_steps=2), MergePolicy(algorithms, 3), seed=0,
                         options={"index": 2})
    expected = score_graph(graphs[0], instance.record.dag)
    assert result.termination_reason == "submitted" and result.steps == 2
    assert result.scores["f1"] == pytest.approx(expected["f1"], nan_ok=True)


def test_merge_policy_checks_its_options():
    with pytest.raises(HeuresisError, match=r"1\.\.2"):
        MergePolicy(["ges", "boss"], 3)
    with pytest.raises(HeuresisError, match="repeated"):
        MergePolicy(["ges", "ges"], 1)
    with pytest.raises(HeuresisError, match="list"):
        MergePolicy("ges", 1)
    with pytest.raises(UnknownNameError):
        MergePolicy(["ges", "nope"], 1)
    with pytest.raises(HeuresisError, match="not in the list"):
        MergePolicy(["ges"], 1, params={"boss": {}})


def test_bca_policy_from_a_selection_file(tmp_path):
    selection = tmp_path / "dev.json"
    selection.write_text(json.dumps({"tables": [
        {"family": "lg", "bca": "ges", "split": "dev"},
        {"family": "wild", "bca": "pc-kci", "split": "dev"}]}))
    assert load_bca_selection(selection) == {"lg": "ges", "wild": "pc-kci"}
    policy = BCAPolicy(selection_path=selection)
    result = run_episode(make_env("lg"), policy, seed=0, options={"index": 0})
    reference = run_episode(make_env("lg"), AlgorithmPolicy("ges"), seed=0, options={"index": 0})
    assert policy.algorithm == "ges" and result.policy == "bca"
    assert result.scores == reference.scores
    assert policy.transcript()[0]["algorithm"] == "ges"
    with pytest.raises(UnknownNameError, match="lg"):
        run_episode(make_env("anm"), BCAPolicy(selection_path=selection), seed=0,
                    options={"index": 0})
    with pytest.raises(HeuresisError, match="does not exist"):
        BCAPolicy(selection_path=tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text(json.dumps({"something": 1}))
    with pytest.raises(HeuresisError, match="tables"):
        BCAPolicy(selection_path=tmp_path / "bad.json")


def test_selections_carry_their_size_and_bca_uses_the_one_of_the_episodes_size(tmp_path):
    files = sorted(SHIPPED_SELECTIONS.glob("bca_selection*.json"))
    sizes = [selection_size(path) for path in files]
    assert files and None not in sizes
    assert len({json.dumps(size, sort_keys=True) for size in sizes}) == len(files)  # one a size
    full = {"d": 10, "n": 600, "graph_model": "er"}
    assert full in sizes and shipped_selection(10, 600) == files[sizes.index(full)]
    assert shipped_selection(D, N) is None and shipped_selection(10, 600, "ba") is None

    sized = tmp_path / "sized.json"
    sized.write_text(json.dumps({"size": {"d": 10, "n": 600}, "bca": {"lg": "ges"}}))
    with pytest.raises(HeuresisError, match=r"d=10, n=600, er graphs.*d=5, n=200, er graphs"):
        run_episode(make_env("lg"), BCAPolicy(selection_path=sized), seed=0,
                    options={"index": 0})
    matching = tmp_path / "matching.json"
    matching.write_text(json.dumps({"size": {"d": D, "n": N}, "bca": {"lg": "ges"}}))
    policy = BCAPolicy(selection_path=matching)
    run_episode(make_env("lg"), policy, seed=0, options={"index": 0})
    assert policy.algorithm == "ges"
    assert policy.transcript()[0]["size"] == {"d": D, "n": N, "graph_model": "er"}
    with pytest.raises(HeuresisError, match="'size' must hold"):
        bad = tmp_path / "badsize.json"
        bad.write_text(json.dumps({"size": {"d": 10}, "bca": {"lg": "ges"}}))
        BCAPolicy(selection_path=bad)

    # the `bca` entry point reads the shipped file of the episode's size (nothing is run)
    shipped = load_bca_selection(shipped_selection(10, 600))
    for family in ("lg", "wild"):
        policy = make_policy("bca", {})
        policy.reset({}, {"instance": {"family": family, "d": 10, "n": 600,
                                       "graph_model": "er"}})
        assert policy.algorithm == shipped[family]
        assert policy.transcript()[0]["source"] == str(shipped_selection(10, 600))


def test_bca_policy_selects_on_the_fly_on_dev_instances():
    candidates = ("pc-fisherz", "ges")
    policy = BCAPolicy(selection_count=2, algorithms=candidates)
    result = run_episode(make_env("lg"), policy, seed=0, options={"index": 5})
    means = {}
    for name in candidates:
        values = []
        for index in range(2):
            instance = instance_of("lg", index)
            f1 = score_graph(tool_run(instance, name).graph, instance.record.dag)["f1"]
            values.append(0.0 if np.isnan(f1) else f1)
        means[name] = float(np.mean(values))
    choice = policy.transcript()[0]
    assert choice["dev_mean_f1"] == pytest.approx(means)
    assert policy.algorithm == max(candidates, key=lambda name: (means[name], -candidates.index(name)))
    reference = run_episode(make_env("lg"), AlgorithmPolicy(policy.algorithm), seed=0,
                            options={"index": 5})
    assert result.scores == reference.scores
    with pytest.raises(HeuresisError, match="selection_count"):
        BCAPolicy(selection_count=0)


def test_entry_point_factories_accept_their_options():
    for spec, options, kind in [
        ("baselines.policies:oracle_policy", {"alpha": 0.05}, OraclePolicy),
        ("baselines.policies:merge_policy", {"algorithms": ["ges", "boss"], "k": 2}, MergePolicy),
        ("baselines.policies:bca_policy", {"selection_count": 3}, BCAPolicy),
        ("agents.routers:paper_router_policy", {"tau": 0.3}, None),
        ("agents.routers:scratchpad_router", {"max_sets_per_pair": 2}, None),
        ("agents.routers:bandit_scratchpad_router", {"strategy": "thompson", "seed": 3}, None),
    ]:
        policy = make_policy(spec, options)
        if kind is not None:
            assert isinstance(policy, kind)
    with pytest.raises(HeuresisError, match="accepts"):
        make_policy("baselines.policies:merge_policy", {"algorithms": ["ges"], "kk": 1})
