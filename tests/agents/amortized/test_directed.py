"""The directed models: equivariance, a consistent three-class head, acyclic decoding, data-only
files, the policies in episodes, and a small training run that must learn."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from agents.amortized import (
    AviciConfig,
    AviciModel,
    DirectedConfig,
    DirectedModel,
    decode,
    discover,
    edge_probabilities,
    load_directed,
    save_directed,
)
from agents.amortized.directed import cell_inputs, row_inputs, spectral_acyclicity
from agents.amortized.fit import FitSettings, fit_directed, fit_normalisation
from agents.amortized.inference import probabilities_from_rows
from agents.amortized.policy import DirectedPolicy, DirectedRepairPolicy
from agents.amortized.stream import build_screens, build_stream, load_stream, screen_path
from agents.amortized.study import score_directed, summarize_directed
from heuresis_env.env import HeuresisEnv
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import (
    LOCAL_SCREEN_FEATURES,
    STATISTICS_NODE_FEATURE_NAMES,
    STATISTICS_PAIR_FEATURE_NAMES,
    compute_pair_statistics,
    local_screen,
)
from heuresis_env.generation import InstanceKey, TrainPrior, generate_instance
from heuresis_env.graphs import has_directed_cycle
from heuresis_env.metrics import score_graph
from heuresis_env.policy import EpisodeSettings

SMALL = {"hidden": 16, "layers": 1, "heads": 2, "feedforward": 32, "row_layers": 1,
         "row_hidden": 8, "rows": 60}


def _inputs(d: int = 6, seed: int = 0):
    rng = np.random.default_rng(seed)
    pairs = rng.normal(size=(d, d, len(STATISTICS_PAIR_FEATURE_NAMES))).astype(np.float32)
    nodes = rng.normal(size=(d, len(STATISTICS_NODE_FEATURE_NAMES))).astype(np.float32)
    rows = rng.normal(size=(80, d))
    return pairs, nodes, rows


def _from_tools(model, instance):
    """P(i → j) from what an episode's tools return (the rows and the pair statistics)."""
    statistics = compute_pair_statistics(instance.X, instance.names, instance.sha256,
                                         searches=False)
    return probabilities_from_rows(model, instance.X, instance.names, {
        "pair_features": STATISTICS_PAIR_FEATURE_NAMES,
        "node_features": STATISTICS_NODE_FEATURE_NAMES,
        "pairs": statistics.pairs, "nodes": statistics.nodes})


def _probabilities(model, pairs, nodes, rows):
    cells = torch.from_numpy(cell_inputs(pairs, nodes))
    return model.directed_probabilities(cells, torch.from_numpy(row_inputs(rows)))[0]


@pytest.mark.parametrize("architecture", ["directed", "avici"])
def test_the_models_are_permutation_equivariant(architecture):
    torch.manual_seed(0)
    model = (DirectedModel(DirectedConfig(**SMALL)) if architecture == "directed"
             else AviciModel(AviciConfig(dim=16, layers=1, heads=2, rows=60)))
    model.eval()
    pairs, nodes, rows = _inputs()
    order = [3, 0, 5, 1, 4, 2]
    plain = _probabilities(model, pairs, nodes, rows)
    moved = _probabilities(model, pairs[np.ix_(order, order)], nodes[order], rows[:, order])
    assert np.allclose(moved, plain[np.ix_(order, order)], atol=1e-5)
    # the row order does not matter either (max-pooled over rows)
    shuffled = _probabilities(model, pairs, nodes, rows[::-1])
    assert np.allclose(shuffled, plain, atol=1e-5)


def test_the_three_classes_of_a_pair_are_one_distribution():
    torch.manual_seed(1)
    model = DirectedModel(DirectedConfig(**SMALL)).eval()
    pairs, nodes, rows = _inputs(7, seed=2)
    cells = torch.from_numpy(cell_inputs(pairs, nodes))
    with torch.no_grad():
        log_p = model.pair_log_probabilities(model(cells, torch.from_numpy(row_inputs(rows))))
    p = log_p[0].exp().numpy()
    assert np.allclose(p.sum(axis=-1), 1.0, atol=1e-5)
    # (none, i→j, j→i) read at (i, j) equals (none, j→i, i→j) read at (j, i)
    assert np.allclose(p[:, :, 0], p[:, :, 0].T, atol=1e-6)
    assert np.allclose(p[:, :, 1], p[:, :, 2].T, atol=1e-6)


def test_decoded_graphs_never_have_a_directed_cycle():
    rng = np.random.default_rng(3)
    for trial in range(200):
        d = int(rng.integers(3, 12))
        p = rng.uniform(size=(d, d)) ** rng.uniform(0.3, 3)
        np.fill_diagonal(p, 0)
        p = p / np.maximum(p + p.T, 1.0) * rng.uniform(0.5, 1.0)  # P(i→j) + P(j→i) ≤ 1
        for skeleton in ("f1", "shd"):
            for orient in ("dag", "cpdag"):
                decoded = decode(p, skeleton, orient)
                assert not has_directed_cycle(decoded.directed), (trial, skeleton, orient)
                assert not np.any(decoded.directed & decoded.directed.T)
                assert not np.any(decoded.directed & decoded.undirected)
                if orient == "dag":
                    assert not decoded.undirected.any()
    # a confident cycle a → b → c → a: the least confident arrow is reversed
    p = np.zeros((3, 3))
    p[0, 1], p[1, 2], p[2, 0] = 0.9, 0.8, 0.7
    decoded = decode(p, "shd", "dag")
    assert decoded.directed[0, 1] and decoded.directed[1, 2] and decoded.directed[0, 2]
    with pytest.raises(HeuresisError, match="skeleton rule"):
        decode(p, "best")


def test_the_spectral_penalty_is_zero_on_dags_and_positive_on_cycles():
    dag = torch.tensor([[[0.0, 1, 1], [0, 0, 1], [0, 0, 0]]])
    # cycles of lengths 3 and 2 (aperiodic): spectral radius the real root of x³ = x + 1
    cycle = torch.tensor([[[0.0, 1, 0], [0, 0, 1], [1, 1, 0]]])
    with torch.no_grad():
        assert float(spectral_acyclicity(torch.log(dag.clamp_min(1e-30)))) < 1e-6
        assert float(spectral_acyclicity(torch.log(cycle.clamp_min(1e-30)))) == \
            pytest.approx(1.3247, abs=1e-2)


def test_saved_models_are_data_only_and_checked(tmp_path):
    torch.manual_seed(4)
    model = DirectedModel(DirectedConfig(**SMALL)).eval()
    folder = save_directed(model, tmp_path / "m", {"name": "test"})
    loaded, record = load_directed(folder)
    pairs, nodes, rows = _inputs()
    assert np.array_equal(_probabilities(model, pairs, nodes, rows),
                          _probabilities(loaded, pairs, nodes, rows))
    assert record["architecture"] == "directed" and record["provenance"]["name"] == "test"
    with np.load(folder / "model.npz", allow_pickle=False) as archive:
        assert all(archive[k].dtype == np.float32 for k in archive.files)
    weights = bytearray((folder / "model.npz").read_bytes())
    weights[-40] ^= 1
    (folder / "model.npz").write_bytes(bytes(weights))
    with pytest.raises(HeuresisError, match="hash"):
        load_directed(folder)
    shutil.rmtree(folder)
    folder = save_directed(model, tmp_path / "m")
    record = json.loads((folder / "model.json").read_text())
    record["config"]["statistics_version"] = 0
    (folder / "model.json").write_text(json.dumps(record))
    with pytest.raises(HeuresisError, match="pair-statistics version"):
        load_directed(folder)


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    """Two tiny stream shards of the benchmark prior (d = 10, n = 600), built for real."""
    out = tmp_path_factory.mktemp("stream")
    build_stream("benchmark", 0, 8, out, shard_size=4)
    return out


def test_stream_shards_hold_statistics_rows_and_labels(stream):
    data = load_stream(sorted(stream.glob("stream-*.npz")))
    assert len(data) == 8 and set(data.d) == {10} and set(data.r) == {512}
    pairs, nodes, rows, dag = data.example(5)
    key = InstanceKey(str(data.family[5]), "train", 5)
    instance = generate_instance(key)
    assert np.array_equal(dag, instance.record.require_graph("t").directed_adjacency())
    assert np.allclose(rows, instance.X[:512], atol=2e-3)  # float16 storage
    statistics = compute_pair_statistics(instance.X, instance.names, instance.sha256,
                                         searches=False)
    assert np.array_equal(pairs, statistics.pairs) and np.array_equal(nodes, statistics.nodes)
    # a second build writes nothing new (resumes)
    before = {p: p.stat().st_mtime_ns for p in stream.glob("stream-*.npz")}
    build_stream("benchmark", 0, 8, stream, shard_size=4)
    assert {p: p.stat().st_mtime_ns for p in stream.glob("stream-*.npz")} == before


def test_training_resumes_where_it_stopped(stream, tmp_path):
    settings = FitSettings(steps=6, checkpoint_every=3, warmup=1, holdout_every=4)
    first = fit_directed(stream, tmp_path / "a", FitSettings(**{**settings.__dict__,
                                                               "stop_at": 3}), SMALL)
    assert first == tmp_path / "a" / "checkpoint" and not (tmp_path / "a" / "model").exists()
    resumed = fit_directed(stream, tmp_path / "a", settings, SMALL)
    straight = fit_directed(stream, tmp_path / "b", settings, SMALL)
    a, _ = load_directed(resumed)
    b, _ = load_directed(straight)
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.allclose(x, y, atol=1e-6), name
    history = [json.loads(line) for line in (tmp_path / "a" / "history.jsonl").open()]
    assert [h["step"] for h in history] == [3, 6]
    best = json.loads((tmp_path / "a" / "best" / "model.json").read_text())["provenance"]
    assert best["held_out_loss"] == min(h["held_out_loss"] for h in history)


def test_a_fixed_shard_set_is_recorded_and_a_run_can_start_from_a_model(stream, tmp_path):
    shards = sorted(stream.glob("stream-*.npz"))
    settings = FitSettings(steps=3, checkpoint_every=3, warmup=1, holdout_every=4, shards=1)
    with pytest.raises(HeuresisError, match="the fixed set needs the first 3"):
        fit_directed(stream, tmp_path / "x", FitSettings(**{**settings.__dict__, "shards": 3}),
                     SMALL)
    first = fit_directed(stream, tmp_path / "a", settings, SMALL)
    record = json.loads((first / "model.json").read_text())["provenance"]
    assert record["shards"] == [shards[0].name] and record["instances"] == 4
    assert list(record["shard_digests"]) == [shards[0].name]
    # a second run from that model: lineage recorded, the start's held-out loss is step 0
    grown = FitSettings(steps=3, checkpoint_every=3, warmup=1, holdout_every=4, shards=2,
                        init=str(first))
    with pytest.raises(HeuresisError, match="give no config"):
        fit_directed(stream, tmp_path / "y", grown, SMALL)
    second = fit_directed(stream, tmp_path / "b", grown)
    provenance = json.loads((second / "model.json").read_text())["provenance"]
    start = json.loads((first / "model.json").read_text())
    assert provenance["init"]["weights_sha256"] == start["weights_sha256"]
    assert provenance["init"]["provenance"]["shards"] == [shards[0].name]
    history = [json.loads(line) for line in (tmp_path / "b" / "history.jsonl").open()]
    assert [h["step"] for h in history] == [0, 3] and history[0]["init"] == \
        start["weights_sha256"]
    # the best model is never worse on held-out instances than the model the run began with
    best = json.loads((tmp_path / "b" / "best" / "model.json").read_text())["provenance"]
    assert best["held_out_loss"] == min(h["held_out_loss"] for h in history)
    assert best["init"]["weights_sha256"] == start["weights_sha256"]


def test_the_held_out_loss_leaves_out_avicis_growing_penalty(stream):
    """The best checkpoint is chosen on the data term: AVICI's acyclicity weight (the dual)
    grows during training, and with it the full loss of an unchanged model."""
    from agents.amortized.fit import _held_out_loss

    data = load_stream(sorted(stream.glob("stream-*.npz")))
    torch.manual_seed(0)
    model = AviciModel(AviciConfig(dim=8, layers=1, heads=2, rows=20))
    held = np.array([0, 1, 2])
    before = _held_out_loss(model, data, held, 20, 0)
    model.dual.fill_(100.0)
    assert _held_out_loss(model, data, held, 20, 0) == pytest.approx(before)


def test_a_run_can_leave_families_out(stream, tmp_path):
    data = load_stream(sorted(stream.glob("stream-*.npz")))
    left_out = str(data.family[0])
    settings = FitSettings(steps=2, checkpoint_every=2, warmup=1, holdout_every=4,
                           exclude_families=(left_out,))
    model_dir = fit_directed(stream, tmp_path / "m", settings, SMALL)
    provenance = json.loads((model_dir / "model.json").read_text())["provenance"]
    assert provenance["instances"] == int((data.family != left_out).sum()) < len(data)
    assert provenance["settings"]["exclude_families"] == [left_out]
    # the normalisation is fitted without the family, too
    model, _ = load_directed(model_dir)
    assert model.config.input_mean == pytest.approx(
        fit_normalisation(data.select(data.family != left_out))[0])
    with pytest.raises(HeuresisError, match="trained with other families excluded"):
        fit_directed(stream, tmp_path / "m", FitSettings(**{**settings.__dict__, "steps": 4,
                                                            "exclude_families": ()}), SMALL)
    with pytest.raises(HeuresisError, match="cannot exclude nonsense: the families are"):
        fit_directed(stream, tmp_path / "x", FitSettings(exclude_families=("nonsense",)),
                     SMALL)
    with pytest.raises(HeuresisError, match="no instances left"):
        fit_directed(stream, tmp_path / "y", FitSettings(
            exclude_families=tuple(sorted(set(data.family)))), SMALL)


def test_policies_submit_the_offline_graph(stream, tmp_path):
    model = load_directed(fit_directed(stream, tmp_path / "m", FitSettings(
        steps=4, checkpoint_every=4, warmup=1), SMALL))[0]
    key = InstanceKey("wild", "dev", 2)
    instance = generate_instance(key)
    p = edge_probabilities(model, instance.X, instance.names, instance.sha256)
    expected = decode(p, "f1", "dag").graph(instance.names)
    truth = instance.record.require_graph("t")
    for cls, guided in ((DirectedPolicy, False), (DirectedRepairPolicy, True)):
        env = HeuresisEnv("wild", split="dev", guided=guided, target="dag", max_steps=10)
        policy = cls(model)
        policy.configure(EpisodeSettings(guided=guided, target="dag"))
        observation, info = env.reset(options={"index": 2})
        policy.reset(observation, info)
        done, steps = False, 0
        while not done:
            observation, _, terminated, truncated, info = env.step(
                policy.act(observation, info))
            done, steps = terminated or truncated, steps + 1
        assert steps == (3 if not guided else 4)
        assert info["scores"] == pytest.approx(score_graph(expected, truth))
    # the same probabilities from what the tools return
    again = _from_tools(model, instance)
    assert np.allclose(again, p)


def test_a_model_can_read_the_local_screen(stream, tmp_path):
    """The screens beside the shards are the screens of their stored rows, close to the
    screen of the instance's table (what inference computes), checked on load; a model
    trained with them computes them at inference from the rows it is given."""
    shards = sorted(stream.glob("stream-*.npz"))
    with pytest.raises(HeuresisError, match="no local screen beside it"):
        load_stream(shards, screens=True)
    build_screens(shards)
    before = {p: screen_path(p).stat().st_mtime_ns for p in shards}
    build_screens(shards)  # resumes: nothing rewritten
    assert {p: screen_path(p).stat().st_mtime_ns for p in shards} == before
    data, plain = load_stream(shards, screens=True), load_stream(shards)
    count = len(STATISTICS_PAIR_FEATURE_NAMES)
    pairs, _, rows, _ = data.example(3)
    assert data.screens and pairs.shape[-1] == count + len(LOCAL_SCREEN_FEATURES)
    assert np.array_equal(pairs[..., :count], plain.example(3)[0])
    assert np.array_equal(pairs[..., count:], local_screen(rows))
    instance = generate_instance(InstanceKey(str(data.family[3]), "train", 3))
    table = local_screen(instance.X)[..., 2]
    assert np.corrcoef(table.ravel(), pairs[..., count + 2].ravel())[0, 1] > 0.98
    assert np.mean((table >= 1.3) == (pairs[..., count + 2] >= 1.3)) > 0.95
    assert data.select(np.arange(len(data)) % 2 == 0).screens
    # a screen of other instances is refused
    archive = dict(np.load(screen_path(shards[0]), allow_pickle=False))
    archive["sha256"] = archive["sha256"][::-1]
    with screen_path(shards[0]).open("wb") as handle:
        np.savez(handle, **archive)
    with pytest.raises(HeuresisError, match="of other instances"):
        load_stream(shards, screens=True)
    screen_path(shards[0]).unlink()
    build_screens(shards)
    # a model that reads them: trained, saved, loaded, and its inference reads the table's
    model_dir = fit_directed(stream, tmp_path / "m", FitSettings(
        steps=2, checkpoint_every=2, warmup=1), {**SMALL, "local_screen": 1})
    model = load_directed(model_dir)[0]
    assert model.reads_screen and model.embed.in_features == len(
        model.config.input_mean) == count + len(LOCAL_SCREEN_FEATURES) + 2 * len(
        STATISTICS_NODE_FEATURE_NAMES) + 1 + 5  # 4 + 1 ordered channels read for (j, i)
    key = InstanceKey("wild", "dev", 2)
    instance = generate_instance(key)
    p = edge_probabilities(model, instance.X, instance.names, instance.sha256)
    again = _from_tools(model, instance)
    assert np.allclose(again, p) and decode(p, "f1", "dag").graph(instance.names).is_dag()
    record = json.loads((model_dir / "model.json").read_text())
    record["config"]["local_screen"] = 99
    (model_dir / "model.json").write_text(json.dumps(record))
    with pytest.raises(HeuresisError, match="local screen version 99"):
        load_directed(model_dir)


def test_discover_reads_a_users_table_and_writes_json(stream, tmp_path):
    model_dir = fit_directed(stream, tmp_path / "m", FitSettings(
        steps=2, checkpoint_every=2, warmup=1), SMALL)
    instance = generate_instance(InstanceKey("lg", "dev", 4, d=6, n=300))
    table = tmp_path / "table.csv"
    with table.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(instance.names)
        writer.writerows((3 * instance.X + 1).tolist())  # another scale: standardized inside
    result = discover(3 * instance.X + 1, instance.names, load_directed(model_dir)[0])
    assert result.graph.is_dag()
    out = tmp_path / "graph.json"
    done = subprocess.run([sys.executable, "-m", "heuresis_env.cli", "discover", str(table),
                           "--model", str(model_dir), "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "P(adjacent)" in done.stdout
    document = json.loads(out.read_text())
    assert document["variables"] == list(instance.names)
    assert document["graph"] == result.graph.to_text().splitlines()
    bad = subprocess.run([sys.executable, "-m", "heuresis_env.cli", "discover", str(table),
                          "--model", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "no directed model" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.mark.slow
def test_a_small_directed_model_trained_from_scratch_beats_pc_kci(tmp_path):
    """From an empty cache: 120 train instances of lg (d = 8, n = 200) from a prior of that
    size, a small statistics-only directed model, scored on 24 dev instances it never saw:
    the paired interval of its F1 gain over PC-KCI is above 0, and its nSHD is below."""
    prior = TrainPrior("test-lg", families=("lg",), d=(8, 8), n=(200, 200))
    build_stream(prior, 0, 120, tmp_path / "stream", shard_size=40)
    model_dir = fit_directed(tmp_path / "stream", tmp_path / "fit", FitSettings(
        steps=300, warmup=20, checkpoint_every=100, batch_cells=640),
        {"hidden": 32, "layers": 2, "row_layers": 0}, prior=prior)
    model = load_directed(model_dir)[0]
    keys = [InstanceKey("lg", "dev", i, d=8, n=200) for i in range(24)]
    records = score_directed({"m": model}, keys, bca={"lg": "pc-kci"})
    summary = summarize_directed(records, ["m:f1-dag"], n_resamples=2000)["lg"]["delta"]
    gain = summary["m:f1-dag - pc-kci f1"]
    assert gain["low"] > 0, gain
    shd = summary["m:f1-dag - pc-kci nshd"]
    assert shd["high"] < 0, shd


def test_the_shipped_directed_model_is_data_only_checked_and_small():
    from agents.amortized import SHIPPED_DIRECTED

    model, record = load_directed(SHIPPED_DIRECTED)
    assert record["architecture"] == "directed" and "frozen design" in record["provenance"]["status"]
    size = sum(p.stat().st_size for p in SHIPPED_DIRECTED.iterdir())
    assert size < 20 * 2**20
    with np.load(SHIPPED_DIRECTED / "model.npz", allow_pickle=False) as archive:
        assert all(archive[k].dtype == np.float32 for k in archive.files)


def test_the_first_model_decides_adjacency_and_the_directed_model_orients():
    from agents.amortized import SHIPPED_DIRECTED, load_model
    from agents.amortized.evaluation import select_edges
    from agents.amortized.policy import SHIPPED_MODEL
    from heuresis_env.evidence import evidence_grid

    model, record = load_directed(SHIPPED_DIRECTED)
    first, _ = load_model(SHIPPED_MODEL)
    key = InstanceKey("anm", "dev", 1)
    instance = generate_instance(key)
    grid = evidence_grid(instance.X, instance.names, instance.sha256)
    selected, _ = select_edges(first.probabilities(grid.pairs, grid.nodes))
    p = edge_probabilities(model, instance.X, instance.names, instance.sha256)
    expected = decode(p, given=selected).graph(instance.names)
    env = HeuresisEnv("anm", split="dev", guided=True, target="dag", max_steps=10)
    policy = DirectedRepairPolicy(model, record, skeleton="first-model", first_model=first)
    policy.configure(EpisodeSettings(guided=True, target="dag"))
    observation, info = env.reset(options={"index": 1})
    policy.reset(observation, info)
    done, tools = False, []
    while not done:
        action = policy.act(observation, info)
        tools.append(action["tool"])
        observation, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert tools == ["evidence_grid", "pair_statistics", "sample_rows", "set_graph", "submit"]
    truth = instance.record.require_graph("t")
    assert info["scores"] == pytest.approx(score_graph(expected, truth))
    assert np.array_equal(expected.skeleton().astype(bool), selected)
    assert expected.is_dag()


def test_a_blended_skeleton_spans_the_two_models():
    """``--blend w``: w = 1 is the first model's skeleton (the v1-skeleton arm, score for
    score), w = 0 the directed model's own expected-F1 skeleton (its f1 arm); weights outside
    [0, 1] and a blend without the first model are refused."""
    from agents.amortized import SHIPPED_DIRECTED, load_model
    from agents.amortized.inference import blend_adjacency
    from agents.amortized.policy import SHIPPED_MODEL

    model, _ = load_directed(SHIPPED_DIRECTED)
    first, _ = load_model(SHIPPED_MODEL)
    key = InstanceKey("anm", "dev", 1)
    (record,) = score_directed({"full": model}, [key], references=False, first_model=first,
                               blends=(0.0, 0.5, 1.0), rules=(("f1", "dag"),))
    assert record.scores["full:blend-1"] == record.scores["full:v1-skeleton"]
    assert record.scores["full:blend-0"] == record.scores["full:f1-dag"]
    assert record.scores["full:blend-0:best-cut"]["f1"] == record.scores["full:best-cut"]["f1"]
    assert 0.0 <= record.scores["full:blend-0.5"]["f1"] <= 1.0
    q = np.array([[0.0, 0.8], [0.8, 0.0]])
    assert blend_adjacency(q, np.zeros((2, 2)), 0.25)[0, 1] == pytest.approx(0.2)
    with pytest.raises(HeuresisError, match=r"\[0, 1\]"):
        blend_adjacency(q, q, 1.5)
    with pytest.raises(HeuresisError, match="needs the first model"):
        score_directed({"full": model}, [key], references=False, blends=(0.5,))
    import argparse

    from agents.amortized.cli import add_arguments, run

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    base = ["study", "--model", f"full={SHIPPED_DIRECTED}", "--count", "1"]
    with pytest.raises(HeuresisError, match="needs --first-model"):
        run(parser.parse_args([*base, "--blend", "0.5"]))
    with pytest.raises(HeuresisError, match="must lie in"):
        run(parser.parse_args([*base, "--first-model", "--blend", "0.5,2"]))
    with pytest.raises(HeuresisError, match="comma-separated weights"):
        run(parser.parse_args([*base, "--first-model", "--blend", "half"]))


def test_a_seed_ensemble_averages_its_members(stream, tmp_path):
    from agents.amortized.inference import ensemble_probabilities

    one, two = (load_directed(fit_directed(stream, tmp_path / f"m{seed}", FitSettings(
        steps=2, checkpoint_every=2, warmup=1, seed=seed), SMALL))[0] for seed in (0, 1))
    instance = generate_instance(InstanceKey("wild", "dev", 1, d=6, n=200))
    args = (instance.X, instance.names, instance.sha256)
    p1, p2 = (edge_probabilities(m, *args) for m in (one, two))
    assert not np.allclose(p1, p2)
    assert np.allclose(ensemble_probabilities([one, two], *args), (p1 + p2) / 2)
    key = [InstanceKey("wild", "dev", 1, d=6, n=200)]
    alone = score_directed({"m": one}, key, bca={"wild": "pc-kci"}, references=False)
    twice = score_directed({"m": [one, one]}, key, bca={"wild": "pc-kci"}, references=False)
    assert alone[0].scores == twice[0].scores
    torch.manual_seed(0)
    avici = AviciModel(AviciConfig(dim=8, layers=1, heads=2, rows=20))
    with pytest.raises(HeuresisError, match="must share one architecture"):
        ensemble_probabilities([one, avici], *args)


def test_study_records_from_parallel_runs_pool_into_one_summary(stream, tmp_path, capsys):
    """Two studies on different families, written with --json, summarized together by
    --records: the pooled summary is the one of scoring them in one run; an instance twice is
    refused."""
    import argparse

    from agents.amortized.cli import add_arguments, run
    from agents.amortized.study import read_records, write_records

    model_dir = fit_directed(stream, tmp_path / "m", FitSettings(
        steps=2, checkpoint_every=2, warmup=1), SMALL)
    model = load_directed(model_dir)[0]
    keys = {f: [InstanceKey(f, "dev", 0, d=5, n=200)] for f in ("lg", "anm")}
    parts = {f: score_directed({"m": model}, k, bca={"lg": "pc-kci", "anm": "pc-kci"})
             for f, k in keys.items()}
    for family, records in parts.items():
        write_records(records, tmp_path / f"{family}.json")
    parser = argparse.ArgumentParser()
    add_arguments(parser)

    def study(*extra: str) -> int:
        return run(parser.parse_args(["study", "--resamples", "200", *extra]))

    assert study("--records", str(tmp_path / "lg.json"), "--records", str(tmp_path / "anm.json"),
                 "--json", str(tmp_path / "pooled.json")) == 0
    pooled = json.loads((tmp_path / "pooled.summary.json").read_text())["summary"]
    direct = summarize_directed(parts["lg"] + parts["anm"], ["m:f1-dag", "m:shd-dag"],
                                n_resamples=200)
    assert pooled["all"]["n"] == 2 and pooled["all"]["m:f1-dag"] == direct["all"]["m:f1-dag"]
    assert pooled["all"]["delta"] == direct["all"]["delta"]
    assert "m:f1-dag - boss nshd" in pooled["all"]["delta"]
    assert len(read_records([tmp_path / "pooled.json"])) == 2
    assert "| all | m:f1-dag |" in capsys.readouterr().out
    with pytest.raises(HeuresisError, match="scored twice"):
        study("--records", str(tmp_path / "lg.json"), "--records", str(tmp_path / "lg.json"))
    (tmp_path / "bad.json").write_text('{"not": "records"}')
    with pytest.raises(HeuresisError, match="not a study's records"):
        study("--records", str(tmp_path / "bad.json"))
    # --versus: every arm also compared with one of them, paired
    capsys.readouterr()
    assert study("--records", str(tmp_path / "lg.json"), "--records", str(tmp_path / "anm.json"),
                 "--versus", "m:shd-dag", "--json", str(tmp_path / "versus.json")) == 0
    versus = json.loads((tmp_path / "versus.summary.json").read_text())["summary"]["all"]
    f1 = [r.scores["m:f1-dag"]["f1"] - r.scores["m:shd-dag"]["f1"]
          for r in parts["lg"] + parts["anm"]]
    assert versus["delta"]["m:f1-dag - m:shd-dag f1"]["mean"] == pytest.approx(np.mean(f1))
    assert "F1 - m:shd-dag [95%]" in capsys.readouterr().out
    with pytest.raises(HeuresisError, match="'m:nothing' is not an arm of this study"):
        study("--records", str(tmp_path / "lg.json"), "--versus", "m:nothing")
    with pytest.raises(HeuresisError, match=r"LABEL=FOLDER\+FOLDER…, got 'e=a\+'"):
        study("--model", "e=a+")


def test_amortized_and_amortized_repair_are_the_frozen_second_design():
    """The default names run the second model's frozen design (docs/amortized.md): the first
    model's skeleton, the shipped directed model's arrows; the -v1 names keep the first model."""
    from agents.amortized import SHIPPED_DIRECTED
    from agents.amortized.policy import (
        AmortizedPolicy,
        AmortizedRepairPolicy,
        DirectedPolicy,
        DirectedRepairPolicy,
    )
    from heuresis_env.evaluation.policies import make_policy

    shipped = json.loads((SHIPPED_DIRECTED / "model.json").read_text())["weights_sha256"]
    for name, cls in (("amortized", DirectedPolicy), ("amortized-repair", DirectedRepairPolicy)):
        policy = make_policy(name, {})
        assert type(policy) is cls and policy.name == name
        assert policy.skeleton == "first-model" and policy.tta == 4
        assert policy.record["weights_sha256"] == shipped
    assert type(make_policy("amortized-v1", {})) is AmortizedPolicy
    assert type(make_policy("amortized-repair-v1", {})) is AmortizedRepairPolicy
    assert make_policy("amortized", {"skeleton": "shd"}).skeleton == "shd"
