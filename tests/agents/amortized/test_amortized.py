"""The amortized model and policies: shards, the model's symmetries, its data-only files, the
episodes' scores equal the offline decision, and (slow) a model trained from an empty cache on
train instances beats the guided start on held-out dev instances."""

from __future__ import annotations

import json
import zipfile

import gymnasium as gym
import numpy as np
import pytest
import torch

from agents.amortized import (
    MODEL_JSON,
    MODEL_WEIGHTS,
    AmortizedPolicy,
    AmortizedRepairPolicy,
    GridModel,
    ModelConfig,
    TrainingSettings,
    build_shards,
    cost_table,
    examples_of,
    load_amortized_repair_v1,
    load_amortized_v1,
    load_examples,
    load_model,
    model_inputs,
    save_model,
    score_examples,
    summarize_scores,
    train_model,
)
from agents.amortized.__main__ import main as amortized_main
from agents.amortized.commands import training_subset
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import guided_start
from heuresis_env.generation import InstanceKey, generate_instance, new_salt
from heuresis_env.policy import EpisodeSettings, run_episode
from heuresis_env.registration import env_id, register_envs

register_envs()
SMALL = {"d": 6, "n": 150}


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    out = tmp_path_factory.mktemp("grids")
    build_shards(["lg", "wild"], "train", range(6), out, workers=2, shard_size=4, **SMALL)
    build_shards(["lg", "wild"], "dev", range(3), out, workers=1, shard_size=4, **SMALL)
    return out


@pytest.fixture(scope="module")
def trained(shards, tmp_path_factory):
    examples = load_examples(sorted(shards.glob("*-train-*.npz")))
    result = train_model(examples, TrainingSettings(epochs=3, hidden=16, layers=1, heads=2,
                                                    feedforward=32, held_out=0.25))
    out = tmp_path_factory.mktemp("model")
    save_model(result.model, out, {"name": "test"})
    return out, result


def test_shards_hold_grids_labels_and_keys(shards):
    paths = sorted(shards.glob("*-train-*.npz"))
    assert [p.name for p in paths] == [
        "lg-train-d6-n150-0000000.npz", "lg-train-d6-n150-0000004.npz",
        "wild-train-d6-n150-0000000.npz", "wild-train-d6-n150-0000004.npz"]
    examples = load_examples(paths)
    assert len(examples) == 12 and examples.pairs.shape[1:3] == (6, 6)
    assert sorted(examples.index[examples.family == "lg"].tolist()) == list(range(6))
    fresh = examples_of([InstanceKey("lg", "train", 5, **SMALL)])
    row = np.flatnonzero((examples.family == "lg") & (examples.index == 5))[0]
    assert fresh.pairs[0].tobytes() == examples.pairs[row].tobytes()
    assert np.array_equal(fresh.dag[0], examples.dag[row])
    with np.load(paths[0], allow_pickle=False) as archive:  # data only: no object arrays
        assert all(archive[k].dtype != object for k in archive.files)
    # a rebuild finds every shard on disk and computes nothing
    messages = []
    build_shards(["lg", "wild"], "train", range(6), shards, workers=1, shard_size=4,
                 progress=messages.append, **SMALL)
    assert messages == ["4 of 4 shards already on disk"]
    assert len(training_subset(examples, 2)) == 4
    table = cost_table(examples).splitlines()
    assert table[0].startswith("| family | instances | pc_kci_wall | correlations")
    assert [row.split(" | ")[1] for row in table[2:]] == ["6", "6", "12"]
    assert set(training_subset(examples, None, ["wild"]).family.tolist()) == {"lg"}


def test_sealed_truth_is_never_written(tmp_path, monkeypatch):
    monkeypatch.setenv("HEURESIS_TEST_SALT", new_salt())
    with pytest.raises(HeuresisError, match="never written"):
        build_shards(["lg"], "test", range(2), tmp_path, **SMALL)


def test_the_model_is_permutation_equivariant_and_symmetric():
    torch.manual_seed(0)
    config = ModelConfig(hidden=16, layers=2, heads=2, feedforward=32)
    model = GridModel(config)
    rng = np.random.default_rng(1)
    for d in (4, 7):
        pairs = rng.normal(size=(d, d, len(config.pair_features))).astype(np.float32)
        nodes = rng.normal(size=(d, len(config.node_features))).astype(np.float32)
        q = model.probabilities(pairs, nodes)
        assert q.shape == (d, d) and np.allclose(q, q.T) and np.all(np.diag(q) == 0)
        order = rng.permutation(d)
        moved = model.probabilities(pairs[np.ix_(order, order)], nodes[order])
        assert np.allclose(moved, q[np.ix_(order, order)], atol=1e-6)
    assert model_inputs(pairs, nodes).shape == (1, 7, 7, config.inputs)


def test_saved_model_is_data_only_and_checked(trained, tmp_path):
    out, result = trained
    model, record = load_model(out)
    rng = np.random.default_rng(0)
    pairs = rng.normal(size=(6, 6, len(model.config.pair_features))).astype(np.float32)
    nodes = rng.normal(size=(6, len(model.config.node_features))).astype(np.float32)
    assert np.array_equal(model.probabilities(pairs, nodes),
                          result.model.probabilities(pairs, nodes))
    assert record["provenance"]["name"] == "test"
    weights = (out / MODEL_WEIGHTS).read_bytes()
    with zipfile.ZipFile(out / MODEL_WEIGHTS) as archive:  # plain .npy arrays, no pickle
        assert all(name.endswith(".npy") for name in archive.namelist())
    np.load(out / MODEL_WEIGHTS, allow_pickle=False)
    tampered = tmp_path / "tampered"
    tampered.mkdir()
    (tampered / MODEL_JSON).write_text((out / MODEL_JSON).read_text())
    (tampered / MODEL_WEIGHTS).write_bytes(weights[:-1] + bytes([weights[-1] ^ 1]))
    with pytest.raises(HeuresisError, match="hash differs"):
        load_model(tampered)
    stale = json.loads((out / MODEL_JSON).read_text())
    stale["config"]["grid_version"] = -1
    (tampered / MODEL_JSON).write_text(json.dumps(stale))
    (tampered / MODEL_WEIGHTS).write_bytes(weights)
    with pytest.raises(HeuresisError, match="another evidence-grid version"):
        load_model(tampered)
    with pytest.raises(HeuresisError, match="cannot read an amortized model"):
        load_model(tmp_path / "missing")


@pytest.mark.parametrize("guided", [True, False])
def test_episodes_score_what_the_offline_decision_scores(trained, guided):
    out, _ = trained
    model, _ = load_model(out)
    policy = load_amortized_repair_v1(out) if guided else load_amortized_v1(out)
    assert isinstance(policy, AmortizedRepairPolicy if guided else AmortizedPolicy)
    settings = EpisodeSettings(max_steps=50, max_seconds=None, guided=guided)
    policy.configure(settings)
    env = gym.make(env_id("wild"), guided=guided, split="dev", max_steps=50, max_seconds=None,
                   **SMALL)
    offline = {s.index: s for s in score_examples(
        model, examples_of([InstanceKey("wild", "dev", i, **SMALL) for i in range(3)]))}
    for index in range(3):
        result = run_episode(env, policy, seed=index, options={"index": index})
        assert result.terminated and result.scores["f1"] == pytest.approx(
            offline[index].amortized)
        steps = 2 + offline[index].restored + offline[index].removed if guided else 2
        assert result.steps == steps
        assert len(policy.transcript()[0]["decisions"]) == 15
        # the selection is a cut of the model's ranking, so the best cut is at least as good
        assert offline[index].amortized <= offline[index].best_cut + 1e-12 <= 1 + 1e-12
    env.close()
    if not guided:
        # PC-KCI's orientations are kept: every directed edge it has among the selection
        instance = generate_instance(InstanceKey("wild", "dev", 2, **SMALL))
        start = guided_start(instance.X, instance.names, instance.sha256).graph
        marks = np.array(result.final_graph["marks"])
        submitted = (marks == 2) & (marks.T == 1)  # arrowhead at j, tail at i: i → j
        kept = start.directed_adjacency() & (marks != 0)
        assert np.array_equal(submitted, kept)
        return
    unguided = gym.make(env_id("wild"), guided=False, split="dev", **SMALL)
    with pytest.raises(HeuresisError, match="guided condition"):
        run_episode(unguided, policy, seed=0, options={"index": 0})
    unguided.close()


def test_the_unguided_policy_submits_a_dag_when_the_target_is_a_dag(trained):
    out, _ = trained
    policy = load_amortized_v1(out)
    policy.configure(EpisodeSettings(max_steps=50, max_seconds=None, target="dag"))
    env = gym.make(env_id("lg"), split="dev", target="dag", **SMALL)
    result = run_episode(env, policy, seed=1, options={"index": 1})
    assert result.terminated and result.error is None and result.scores["shd"] >= 0
    submitted = result.final_graph
    assert submitted is not None
    marks = np.array(submitted["marks"])
    assert not np.any((marks > 0) & (marks.T > 0) & (marks == marks.T))  # no undirected edge
    env.close()


def test_leave_one_family_out_trains_without_the_family_it_scores(shards, tmp_path):
    out = tmp_path / "lofo"
    assert amortized_main(["lofo", "--data", str(shards), "--families", "lg,wild", "--split",
                           "dev", "--count", "3", "--epochs", "2", "--hidden", "16", "--layers",
                           "1", "--resamples", "200", "--out", str(out), "--d", "6",
                           "--n", "150"]) == 0
    record = json.loads((out / "lofo.json").read_text())
    assert set(record["summary"]) == {"lg", "wild"} and record["sealed"] is False
    for family in ("lg", "wild"):
        provenance = json.loads((out / f"without-{family}" / MODEL_JSON).read_text())["provenance"]
        assert provenance["excluded"] == [family] and provenance["train_instances"] == 6
        scores = record["scores"][family]
        assert [s["family"] for s in scores["without"]] == [family] * 3
        # the same instances scored by both models: PC-KCI's score is the model's no part
        assert [s["pc_kci"] for s in scores["without"]] == [s["pc_kci"] for s in scores["with"]]
        row = record["summary"][family]
        without = np.mean([s["amortized"] for s in scores["without"]])
        assert row["without"] == pytest.approx(without)
        assert row["delta_with"][0] == pytest.approx(
            without - np.mean([s["amortized"] for s in scores["with"]]))
    model, _ = load_model(out / "without-lg")
    again = score_examples(model, examples_of([InstanceKey("lg", "dev", i, **SMALL)
                                               for i in range(3)]))
    assert [s.amortized for s in again] == [s["amortized"] for s in record["scores"]["lg"]["without"]]
    all_model = json.loads((out / "all" / MODEL_JSON).read_text())["provenance"]
    assert all_model["train_instances"] == 12 and all_model["excluded"] == []
    with pytest.raises(HeuresisError, match="no train instances of anm"):
        amortized_main(["lofo", "--data", str(shards), "--families", "anm", "--split", "dev",
                        "--count", "1", "--out", str(tmp_path / "x"), "--d", "6", "--n", "150"])


def test_transfer_summary_refuses_scores_of_different_instances(trained, shards):
    from agents.amortized.evaluation import transfer_summary

    model, _ = load_model(trained[0])
    scores = score_examples(model, load_examples(sorted(shards.glob("*-dev-*.npz"))))
    with pytest.raises(HeuresisError, match="same instances"):
        transfer_summary(scores, scores[::-1])
    row = transfer_summary(scores, scores, n_resamples=100)
    assert row["delta_with"] == [0.0, 0.0, 0.0] and row["instances"] == len(scores)


@pytest.mark.slow
def test_a_model_trained_on_train_instances_beats_the_guided_start(tmp_path):
    """From an empty cache: 60 train instances of lg (d = 8, n = 200), a small model, scored
    on 24 dev instances it never saw; the paired interval of the gain over PC-KCI is above 0."""
    size = {"d": 8, "n": 200}
    data = tmp_path / "grids"
    assert amortized_main(["data", "--families", "lg", "--split", "train", "--count", "60",
                           "--workers", "2", "--out", str(data), "--d", "8", "--n", "200"]) == 0
    assert amortized_main(["data", "--families", "lg", "--split", "dev", "--count", "24",
                           "--workers", "2", "--out", str(data), "--d", "8", "--n", "200"]) == 0
    model_dir = tmp_path / "model"
    assert amortized_main(["train", "--data", str(data), "--out", str(model_dir), "--d", "8",
                           "--n", "200", "--epochs", "25", "--hidden", "32", "--layers", "2",
                           "--resamples", "2000"]) == 0
    record = json.loads((model_dir / MODEL_JSON).read_text())
    assert record["provenance"]["train_instances"] == 60
    dev = record["provenance"]["dev"]["lg"]
    assert dev["instances"] == 24
    gain, low, _ = dev["delta_pc_kci"]
    assert low > 0, dev
    model, _ = load_model(model_dir)
    again = summarize_scores(score_examples(model, examples_of(
        [InstanceKey("lg", "dev", i, **size) for i in range(24)])), n_resamples=2000)
    assert again["lg"]["delta_pc_kci"][0] == pytest.approx(gain)


@pytest.mark.slow
@pytest.mark.machine_wide("ray")  # one local Ray at a time (pytest -n)
def test_ray_tasks_compute_the_same_examples_as_local_workers(shards):
    pytest.importorskip("ray")
    jobs = [("wild", "train", i, SMALL["d"], SMALL["n"], None) for i in range(3)]
    from agents.amortized import compute_examples

    on_ray = [example for _, example in compute_examples(jobs, workers=2, backend="ray")]
    local = load_examples(sorted(shards.glob("wild-train-*.npz")))
    for example in on_ray:
        row = int(np.flatnonzero(local.index == example.index)[0])
        assert example.pairs.tobytes() == local.pairs[row].tobytes()
        assert np.array_equal(example.dag, local.dag[row])
    with pytest.raises(HeuresisError, match="backend must be"):
        next(compute_examples(jobs, backend="dask"))
