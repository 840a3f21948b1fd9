"""``heuresis evaluate``: run directories, resume after a kill or Ctrl-C, config checks,
identical budgets, error and truncation episodes, and the local vs Ray backends."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from heuresis_env import cli
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.env import read_trace, replay_trace
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.evaluation import (
    RunStore,
    RunSummary,
    config_differences,
    evaluate,
    evaluate_many,
    make_policy,
)
from heuresis_env.evaluation import episode as episode_module
from heuresis_env.evaluation.policies import parse_policy_options, resolve_policy_factory
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.generation.salts import new_salt, salt_digest
from heuresis_env.graphs import Graph
from heuresis_env.metrics import score_graph
from heuresis_env.policy import EpisodeSettings

ROOT = Path(__file__).resolve().parents[2]
FISHER = "tests.evaluation.eval_policies:fisher_skeleton"
SMALL = {"d": 4, "n": 100, "split": "dev", "progress": False}
SETTINGS = EpisodeSettings(max_steps=20, max_seconds=60.0)
RESULT_FIELDS = {"episode_id", "policy", "family", "split", "index", "repeat",
                 "instance_sha256", "scores", "steps", "terminated", "truncated", "finished",
                 "termination_reason", "wall_seconds", "tokens", "cost_usd", "api_retries",
                 "final_graph", "trace", "transcript", "error", "worker", "ground_truth",
                 "reference", "config_digest"}
SCORE_FIELDS = {"f1", "precision", "recall", "shd", "nshd", "shd_cpdag", "n_edges",
                "orientation"}
CONFIG_FIELDS = {"format_version", "policy", "policy_options", "settings", "split", "families",
                 "count", "repeats", "d", "n", "instance_keys", "salt_digest",
                 "reference", "policy_isolation", "package_versions", "code_version", "created"}
#: fields that may differ between two runs of a deterministic policy (the config digest
#: differs when an option that does not change the policy's graphs does, e.g. a sleep)
TIMING_FIELDS = {"wall_seconds", "worker", "config_digest"}


def comparable(records: list[dict]) -> dict[str, dict]:
    """Records by episode id without the timing and worker fields."""
    return {r["episode_id"]: {k: v for k, v in r.items() if k not in TIMING_FIELDS}
            for r in records}


def assert_same_records(records: list[dict], expected: list[dict]) -> None:
    """The same episodes with the same fields (timing aside); the message names what differs."""
    got, want = comparable(records), comparable(expected)
    assert sorted(got) == sorted(want)
    differences = {episode: {k: (got[episode].get(k), want[episode].get(k))
                             for k in set(got[episode]) | set(want[episode])
                             if got[episode].get(k) != want[episode].get(k)}
                   for episode in got}
    assert not any(differences.values()), differences


def run_fisher(out: Path, **kwargs) -> RunSummary:
    """The deterministic policy on lg and wild (2 instances each unless told)."""
    options = {"families": ["lg", "wild"], "count": 2, "settings": SETTINGS, **SMALL, **kwargs}
    return evaluate(FISHER, out_dir=out, **options)


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A clean in-process run of the deterministic policy (2 families × 3 instances)."""
    out = tmp_path_factory.mktemp("clean") / "run"
    run_fisher(out, count=3)
    return out, RunStore(out).read_results()


# ---- policies -----------------------------------------------------------------------------------

def test_policy_specs_resolve_or_fail_with_the_known_names():
    policy = make_policy(FISHER, {"alpha": 0.05})
    assert policy.alpha == 0.05 and policy.name == "fisher-skeleton"
    assert make_policy("tests.evaluation.eval_policies:FisherSkeleton").alpha == 0.01
    with pytest.raises(UnknownNameError, match="unknown policy 'no-such-policy'"):
        resolve_policy_factory("no-such-policy")
    with pytest.raises(HeuresisError, match="no module named 'tests.nowhere'"):
        resolve_policy_factory("tests.nowhere:Policy")
    with pytest.raises(HeuresisError, match="has no attribute 'Missing'"):
        resolve_policy_factory("tests.evaluation.eval_policies:Missing")
    with pytest.raises(HeuresisError, match="not a heuresis_env.policy.Policy"):
        make_policy("tests.evaluation.eval_policies:BrokenFactory")
    with pytest.raises(HeuresisError, match=r"accepts: alpha, sleep, fail_on_index"):
        make_policy("tests.evaluation.eval_policies:FisherSkeleton", {"alfa": 0.1})


def test_policy_options_parse_json_values_and_refuse_malformed_ones():
    assert parse_policy_options(["alpha=0.05", "name=router", "flags=[1, 2]", "on=true"]) == {
        "alpha": 0.05, "name": "router", "flags": [1, 2], "on": True}
    for bad in (["alpha"], ["2x=1"], ["a=1", "a=2"]):
        with pytest.raises(HeuresisError):
            parse_policy_options(bad)


# ---- the run store ------------------------------------------------------------------------------

def test_results_file_appends_whole_lines_and_cuts_a_torn_last_line(tmp_path):
    store = RunStore(tmp_path)
    store.prepare({"format_version": 2, "policy": "p"})
    store.append_result({"episode_id": "lg/dev/0/r0", "scores": {"precision": float("nan")}})
    with open(store.results_path, "ab") as f:  # a writer killed mid-line
        f.write(b'{"episode_id": "lg/dev/1/r0", "sco')
    assert [r["episode_id"] for r in store.read_results()] == ["lg/dev/0/r0"]
    assert store.repair_results() == len(b'{"episode_id": "lg/dev/1/r0", "sco')
    store.append_result({"episode_id": "lg/dev/1/r0"})
    lines = store.results_path.read_text().splitlines()
    assert [json.loads(line)["episode_id"] for line in lines] == ["lg/dev/0/r0", "lg/dev/1/r0"]
    assert json.loads(lines[0])["scores"]["precision"] == "nan"  # strict JSON, like traces
    store.results_path.write_text('{"episode_id": "x"}\nnot json\n')
    with pytest.raises(HeuresisError, match=r"results.jsonl:2: not JSON"):
        store.read_results()


def test_config_differences_name_each_field():
    old = {"policy": "router", "settings": {"max_steps": 50, "target": "none"}, "count": 2,
           "created": "then", "instance_keys": [{"family": "lg", "split": "dev", "index": 0}]}
    new = {"policy": "router", "settings": {"max_steps": 40, "target": "dag"}, "count": 2,
           "created": "now", "instance_keys": [{"family": "lg", "split": "dev", "index": 0},
                                               {"family": "lg", "split": "dev", "index": 1}]}
    differences = config_differences(old, new)
    assert differences[0].startswith("instance_keys: 1 added (e.g. lg/dev/1")
    assert differences[1:] == ["settings.max_steps: was 50, now 40",
                               'settings.target: was "none", now "dag"']
    assert config_differences(old, {**old, "created": "later"}) == []


# ---- episodes -----------------------------------------------------------------------------------

def test_a_run_writes_the_run_format_with_scores_checked_against_the_hidden_record(clean_run):
    out, records = clean_run
    config = json.loads((out / "config.json").read_text())
    assert set(config) == CONFIG_FIELDS
    assert config["settings"] == SETTINGS.to_dict() and config["salt_digest"] is None
    assert [(k["family"], k["index"]) for k in config["instance_keys"]] == [
        ("lg", 0), ("lg", 1), ("lg", 2), ("wild", 0), ("wild", 1), ("wild", 2)]
    assert config["package_versions"]["numpy"] == np.__version__
    assert {r["episode_id"] for r in records} == {
        f"{f}/dev/{i}/r0" for f in ("lg", "wild") for i in range(3)}
    for record in records:
        assert set(record) == RESULT_FIELDS and set(record["scores"]) == SCORE_FIELDS
        assert record["finished"] and record["termination_reason"] == "submitted"
        assert record["error"] is None and record["tokens"] is None
        key = InstanceKey(record["family"], "dev", record["index"], d=4, n=100)
        instance = generate_instance(key)
        assert record["instance_sha256"] == instance.sha256
        # the policy's graph: the pairs that a marginal Fisher-z test finds dependent
        test = make_ci_test("fisherz", instance.X)
        expected = {frozenset((f"X{i + 1}", f"X{j + 1}"))
                    for i, j in itertools.combinations(range(4), 2)
                    if test.test(i, j, ()).p_value < 0.01}
        graph = Graph.from_dict(record["final_graph"])
        assert {frozenset((e.u, e.v)) for e in graph.edges()} == expected
        truth = score_graph(graph, instance.record.dag, instance.record.cpdag)
        for name, value in truth.items():
            recorded = float(record["scores"][name])
            assert recorded == pytest.approx(float(value), nan_ok=True)
        assert record["steps"] == 6 + len(expected) + 1
        trace = read_trace(out / record["trace"])
        assert trace.header["config"]["max_steps"] == SETTINGS.max_steps
        assert trace.header["instance"]["sha256"] == instance.sha256
        assert Graph.from_dict(trace.end["final_graph"]) == graph
        assert replay_trace(out / record["trace"]).ok  # the run's traces replay


def test_rerunning_a_finished_run_runs_nothing_and_duplicates_nothing(tmp_path):
    out = tmp_path / "run"
    first = run_fisher(out, count=1)
    assert (first.ran, first.resumed) == (2, 0)
    again = run_fisher(out, count=1)
    assert (again.ran, again.resumed) == (2 - 2, 2)
    assert len(RunStore(out).results_path.read_text().splitlines()) == 2
    assert again.overall.mean_f1 == first.overall.mean_f1


def test_a_changed_config_is_refused_naming_the_fields_and_accepted_with_force(tmp_path,
                                                                                 capsys,
                                                                                 monkeypatch):
    out = tmp_path / "run"
    run_fisher(out, count=1)
    changed = EpisodeSettings(max_steps=25, max_seconds=60.0, target="cpdag")
    with pytest.raises(HeuresisError) as refused:
        run_fisher(out, count=2, settings=changed)
    message = str(refused.value)
    assert "settings.max_steps: was 20, now 25" in message
    assert 'settings.target: was "none", now "cpdag"' in message
    assert "instance_keys: 2 added (e.g. lg/dev/1" in message
    assert "count: was 1, now 2" in message
    assert len(RunStore(out).read_results()) == 2  # nothing ran
    # the command line says the same, with exit status 2
    monkeypatch.setitem(cli.SUBCOMMANDS, "evaluate", "heuresis_env.cli.evaluate")
    status = cli.main(["evaluate", "--policy", "tests.evaluation.eval_policies:NeverSubmits", "--family",
                       "lg", "--split", "dev", "--count", "1", "--max-steps", "20",
                       "--max-seconds", "60", "--d", "4", "--n", "100", "--out", str(out),
                       "--no-progress"])
    assert status == 2
    assert ("policy: was \"tests.evaluation.eval_policies:fisher_skeleton\", now "
            "\"tests.evaluation.eval_policies:NeverSubmits\"") in capsys.readouterr().err
    # --force accepts it: the old config is kept beside, finished episodes are kept
    summary = run_fisher(out, count=2, settings=changed, force=True)
    assert (summary.resumed, summary.ran) == (2, 2)
    assert any("settings.max_steps" in d for d in summary.accepted_differences)
    assert json.loads((out / "config.json").read_text())["settings"]["max_steps"] == 25
    replaced = list(out.glob("config.replaced-*.json"))
    assert len(replaced) == 1 and json.loads(replaced[0].read_text())["settings"]["max_steps"] == 20


def test_a_sealed_test_split_records_only_the_salt_digest(tmp_path, monkeypatch):
    monkeypatch.delenv("HEURESIS_TEST_SALT", raising=False)
    out = tmp_path / "run"
    options = {**SMALL, "split": "test", "families": ["lg"], "count": 1, "settings": SETTINGS}
    secret, other = new_salt(), new_salt()
    evaluate(FISHER, out_dir=out, salt=secret, **options)
    config_text = (out / "config.json").read_text()
    assert secret not in config_text
    assert json.loads(config_text)["salt_digest"] == salt_digest(secret)
    assert json.loads(config_text)["salt_digest"].startswith("scrypt$")  # slow, keyed
    record = RunStore(out).read_results()[0]
    key = InstanceKey("lg", "test", 0, d=4, n=100)
    assert record["instance_sha256"] == generate_instance(key, salt=secret).sha256
    assert record["instance_sha256"] != generate_instance(key).sha256
    assert read_trace(out / record["trace"]).header["sealed"] is True
    with pytest.raises(HeuresisError, match="salt_digest: was"):
        evaluate(FISHER, out_dir=out, salt=other, **options)
    with pytest.raises(HeuresisError, match="heuresis salt"):
        evaluate(FISHER, out_dir=tmp_path / "weak", salt="s3cret", **options)
    monkeypatch.setenv("HEURESIS_TEST_SALT", secret)  # the environment variable is the same
    assert evaluate(FISHER, out_dir=out, **options).resumed == 1


def test_a_second_writer_on_the_same_run_directory_is_refused(tmp_path):
    out = tmp_path / "run"
    with RunStore(out).lock(), pytest.raises(HeuresisError, match="another `heuresis evaluate`"):
        run_fisher(out, count=1)


def test_a_policy_that_raises_is_an_error_episode_scored_as_it_stands(tmp_path):
    out = tmp_path / "run"
    summary = run_fisher(out, families=["lg"], count=3, policy_options={"fail_on_index": 1})
    records = {r["index"]: r for r in RunStore(out).read_results()}
    assert summary.ran == 3 and summary.overall.errors == 1
    failed = records[1]
    assert failed["error"] == ("policy.act() raised RuntimeError: scripted failure on "
                               "instance 1")
    assert failed["termination_reason"] == "aborted"
    assert not failed["finished"] and not failed["truncated"] and not failed["terminated"]
    graph = Graph.from_dict(failed["final_graph"])
    assert graph.n_edges() == 1  # its one edit before the failure is scored
    instance = generate_instance(InstanceKey("lg", "dev", 1, d=4, n=100))
    expected = score_graph(graph, instance.record.dag, instance.record.cpdag)
    assert failed["scores"]["f1"] == pytest.approx(expected["f1"])
    assert read_trace(out / failed["trace"]).end["termination_reason"] == "aborted"
    assert records[0]["error"] is None and records[2]["finished"]  # the run went on


def test_truncation_by_steps_and_by_wall_time_is_recorded(tmp_path, monkeypatch):
    steps = evaluate("tests.evaluation.eval_policies:NeverSubmits", families=["lg"], count=1,
                     settings=EpisodeSettings(max_steps=5, max_seconds=60.0),
                     out_dir=tmp_path / "steps", **SMALL)
    record = RunStore(tmp_path / "steps").read_results()[0]
    assert (record["steps"], record["termination_reason"]) == (5, "step_budget")
    assert record["truncated"] and not record["finished"] and record["error"] is None
    assert steps.overall.truncation_rate == 1.0 and np.isnan(steps.overall.mean_f1_finished)

    evaluate("tests.evaluation.eval_policies:NeverSubmits", families=["lg"], count=1,
             settings=EpisodeSettings(max_steps=1000, max_seconds=0.5),
             policy_options={"sleep": 0.2}, out_dir=tmp_path / "wall", **SMALL)
    record = RunStore(tmp_path / "wall").read_results()[0]
    assert record["termination_reason"] == "wall_time" and record["truncated"]
    assert 2 <= record["steps"] <= 4

    # a policy stuck inside act() is interrupted once the budget plus the grace has passed
    monkeypatch.setattr(episode_module, "WALL_GRACE_SECONDS", 0.3)
    started = time.perf_counter()
    evaluate("tests.evaluation.eval_policies:AddsThenHangs", families=["lg"], count=1,
             settings=EpisodeSettings(max_steps=1000, max_seconds=0.5),
             out_dir=tmp_path / "hang", **SMALL)
    assert time.perf_counter() - started < 30
    record = RunStore(tmp_path / "hang").read_results()[0]
    assert record["termination_reason"] == "wall_time" and record["truncated"]
    assert record["steps"] == 1 and record["scores"]["n_edges"] == 1
    assert 0.5 <= record["wall_seconds"] < 5


def test_the_runner_imposes_the_budgets_a_policy_cannot_change_them(tmp_path):
    with pytest.raises(HeuresisError, match=r"changed the settings the runner gave it "
                                            r"\(max_steps 20 → 2000\)"):
        evaluate("tests.evaluation.eval_policies:ChangesBudgetsInConfigure", families=["lg"], count=1,
                 settings=SETTINGS, out_dir=tmp_path / "configure", **SMALL)
    evaluate("tests.evaluation.eval_policies:ChangesBudgetsMidEpisode", families=["lg"], count=2,
             settings=EpisodeSettings(max_steps=6, max_seconds=60.0),
             out_dir=tmp_path / "mid", **SMALL)
    for record in RunStore(tmp_path / "mid").read_results():
        assert (record["steps"], record["termination_reason"]) == (6, "step_budget")
        assert "changed its settings during the episode (max_steps 6 → 10000; " \
               "token_budget_per_turn 4096 → 1000000)" in record["error"]
        assert read_trace(tmp_path / "mid" / record["trace"]).header["config"]["max_steps"] == 6


def test_usage_transcripts_and_the_rl_view(tmp_path):
    evaluate("tests.evaluation.eval_policies:ReportsUsage", families=["wild"], count=2, settings=SETTINGS,
             out_dir=tmp_path / "usage", **SMALL)
    for record in RunStore(tmp_path / "usage").read_results():
        assert record["tokens"] == {"prompt": 200, "completion": 14}
        assert record["cost_usd"] == pytest.approx(0.002) and record["api_retries"] == 1
        transcript = json.loads((tmp_path / "usage" / record["transcript"]).read_text())
        assert record["transcript"] == f"transcripts/wild_dev_{record['index']}_r0.json"
        assert [turn["role"] for turn in transcript] == ["user", "assistant", "assistant"]
    evaluate("tests.evaluation.eval_policies:RLObserver", families=["lg"], count=1, settings=SETTINGS,
             out_dir=tmp_path / "rl", **SMALL)
    record = RunStore(tmp_path / "rl").read_results()[0]
    assert record["error"] is None and record["termination_reason"] == "submitted"
    assert record["steps"] == 1 and record["scores"]["n_edges"] == 0


def test_repeats_and_bad_arguments(tmp_path):
    summary = run_fisher(tmp_path / "repeats", families=["lg"], count=1, repeats=2)
    ids = [r["episode_id"] for r in RunStore(tmp_path / "repeats").read_results()]
    assert sorted(ids) == ["lg/dev/0/r0", "lg/dev/0/r1"] and summary.total_episodes == 2
    bad = [({"families": ["nope"]}, "unknown family 'nope'"),
           ({"count": 101}, r"count must be an integer in 1..100"),
           ({"backend": "dask"}, "unknown backend 'dask'"),
           ({"workers": 0}, "workers must be an integer ≥ 1"),
           ({"settings": {"max_steps": 0}}, "max_steps must be an integer ≥ 1"),
           ({"settings": {"prompt_level": 7}}, r"prompt_level must be one of \[1, 2, 3, 4\]"),
           ({"settings": {"target": "pag"}}, "unknown target 'pag'"),
           ({"settings": {"budget": 3}}, r"unknown episode settings \['budget'\]"),
           ({"address": "auto"}, "address is for the ray backend"),
           ({"policy_options": {"rng": object()}}, "policy options must be JSON values")]
    for kwargs, message in bad:
        with pytest.raises(HeuresisError, match=message):
            run_fisher(tmp_path / "bad", **kwargs)
    assert not (tmp_path / "bad").exists()


def test_local_worker_processes_match_the_in_process_run(tmp_path, clean_run):
    out = tmp_path / "run"
    summary = run_fisher(out, count=3, workers=2)
    records = RunStore(out).read_results()
    assert summary.ran == 6 and len({r["worker"] for r in records}) >= 1
    assert_same_records(records, clean_run[1])
    with pytest.raises(HeuresisError, match="could not be built: RuntimeError: this policy "
                                            "cannot be built here"):
        evaluate("tests.evaluation.eval_policies:fails_in_worker", families=["lg"], count=2, workers=2,
                 settings=SETTINGS, out_dir=tmp_path / "fails", **SMALL)
    # a policy process that dies costs its episode, not the run
    evaluate("tests.evaluation.eval_policies:KillsItsProcess", families=["lg"], count=3,
             workers=2, settings=SETTINGS, out_dir=tmp_path / "policy-killed", **SMALL)
    saved = {r["episode_id"]: r for r in RunStore(tmp_path / "policy-killed").read_results()}
    assert sorted(saved) == ["lg/dev/0/r0", "lg/dev/1/r0", "lg/dev/2/r0"]
    assert "the policy process died (SIGSEGV)" in saved["lg/dev/1/r0"]["error"]
    assert saved["lg/dev/2/r0"]["error"] is None and saved["lg/dev/2/r0"]["finished"]
    # a worker killed from outside (out of memory, say) stops the run; finished episodes stay
    with pytest.raises(HeuresisError, match=r"died while running episode lg/dev/1/r0 \(exit "
                                            r"code -9\); finished episodes are saved"):
        evaluate("tests.evaluation.eval_policies:KillsItsProcess", families=["lg"], count=3,
                 workers=2, settings=SETTINGS, out_dir=tmp_path / "killed",
                 policy_options={"parent": True}, policy_isolation="process", **SMALL)
    saved = {r["episode_id"] for r in RunStore(tmp_path / "killed").read_results()}
    assert "lg/dev/1/r0" not in saved and saved <= {"lg/dev/0/r0", "lg/dev/2/r0"}


def _worker_pids(records: list[dict]) -> set[int]:
    """The process ids of the workers that ran these episodes (``local:HOST:PID``)."""
    return {int(r["worker"].rsplit(":", 1)[1]) for r in records}


def test_a_job_of_three_runs_shares_one_pool_and_matches_separate_runs(tmp_path, clean_run):
    loose = {"policy_options": {"alpha": 0.05}, "count": 3}
    separate = tmp_path / "separate"
    evaluate(FISHER, out_dir=separate, settings=SETTINGS, families=["lg", "wild"],
             **{**SMALL, **loose})
    common = {"policy_spec": FISHER, "settings": SETTINGS, "d": 4, "n": 100, "split": "dev"}
    runs = [{**common, "out_dir": tmp_path / "a", "families": ["lg", "wild"], "count": 3},
            {**common, **loose, "out_dir": tmp_path / "b", "families": ["wild"]},
            {**common, **loose, "out_dir": tmp_path / "c", "families": ["lg"]}]
    summaries = evaluate_many(runs, workers=2, progress=False)
    assert [(s.ran, s.resumed) for s in summaries] == [(6, 0), (3, 0), (3, 0)]
    assert [s.out_dir for s in summaries] == [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    a, b, c = (RunStore(tmp_path / name).read_results() for name in "abc")
    # the same results as separate runs (the in-process clean run, a separate evaluate)
    assert_same_records(a, clean_run[1])
    assert_same_records(b + c, RunStore(separate).read_results())
    # one pool of two processes (not this one) ran all three runs: the two workers began with
    # the first two runs, so whichever served the third had served one of those before
    # (separate evaluate calls would start new workers for each run)
    pids = _worker_pids(a) | _worker_pids(b) | _worker_pids(c)
    assert len(pids) <= 2 and os.getpid() not in pids
    assert _worker_pids(c) <= _worker_pids(a) | _worker_pids(b)
    # each run keeps its own config and resumes on its own
    assert RunStore(tmp_path / "b").read_config()["policy_options"] == {"alpha": 0.05}
    again = evaluate_many(runs, workers=2, progress=False)
    assert [(s.ran, s.resumed) for s in again] == [(0, 6), (0, 3), (0, 3)]
    with pytest.raises(HeuresisError, match="same run directory"):
        evaluate_many([runs[0], runs[0]], workers=2, progress=False)
    with pytest.raises(HeuresisError, match=r"unknown run arguments \['workers'\]"):
        evaluate_many([{**runs[0], "workers": 2}], progress=False)


def test_the_job_queue_keeps_a_worker_on_its_run_and_shares_the_last_one():
    def tasks(run: int, count: int) -> list[tuple[int, episode_module.EpisodeTask]]:
        return [(run, episode_module.EpisodeTask(f"r{run}/{k}", "lg", "dev", k, 0, k))
                for k in range(count)]

    job = episode_module.JobQueue([*tasks(0, 3), *tasks(1, 2), *tasks(2, 4)])
    assert len(job) == 9
    taken = [(worker, job.next_for(worker)) for worker in ("w0", "w1")]
    assert [(w, item[0], item[1].episode_id) for w, item in taken] == [
        ("w0", 0, "r0/0"), ("w1", 1, "r1/0")]  # two runs, one worker each
    assert job.next_for("w1")[1].episode_id == "r1/1"  # w1 stays with its run
    assert job.next_for("w1")[1].episode_id == "r2/0"  # run 1 is done: the free run 2
    assert job.next_for("w0")[1].episode_id == "r0/1"
    assert job.next_for("w0")[1].episode_id == "r0/2"
    # run 0 is done and run 2 is served: w0 joins it (never back to run 0)
    assert [job.next_for(w)[1].episode_id for w in ("w0", "w1", "w0")] == [
        "r2/1", "r2/2", "r2/3"]
    assert job.next_for("w0") is None and job.next_for("w1") is None and len(job) == 0


@pytest.mark.parametrize("workers", [1, 2])
def test_a_policy_that_cannot_start_costs_its_run_not_the_job(tmp_path, clean_run, workers):
    common = {"settings": SETTINGS, "d": 4, "n": 100, "split": "dev"}
    runs = [{**common, "policy_spec": "tests.evaluation.eval_policies:fails_in_worker",
             "out_dir": tmp_path / "fails", "families": ["lg"], "count": 2},
            {**common, "policy_spec": FISHER, "out_dir": tmp_path / "a",
             "families": ["lg", "wild"], "count": 3}]
    with pytest.raises(HeuresisError, match=r"1 of the job's 2 runs could not start .*fails: "
                                            r"policy .* could not be built: RuntimeError: this "
                                            r"policy cannot be built here"):
        evaluate_many(runs, workers=workers, progress=False)
    # the other run went on to the end, and the failing one left no run directory content
    assert_same_records(RunStore(tmp_path / "a").read_results(), clean_run[1])
    assert not (tmp_path / "fails" / "results.jsonl").exists()
    assert not (tmp_path / "fails" / "config.json").exists()


# ---- killed and interrupted runs (the command in a subprocess) -------------------------------

LAUNCHER = ("import sys\nfrom heuresis_env import cli\n"
            "cli.SUBCOMMANDS.setdefault('evaluate', 'heuresis_env.cli.evaluate')\n"
            "sys.exit(cli.main(sys.argv[1:]))\n")


def evaluate_command(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-c", LAUNCHER, "evaluate", "--policy", FISHER, "--family",
            "lg,wild", "--split", "dev", "--count", "3", "--max-steps", "20",
            "--max-seconds", "60", "--d", "4", "--n", "100", "--out", str(out), "--no-progress",
            *extra]


def _lines(path: Path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _stop_after_some_lines(out: Path, command: list[str], sig: int
                           ) -> tuple[int, list[int], str]:
    # a shell starts background jobs with SIGINT ignored, and Python keeps an ignored SIGINT:
    # give the run the default disposition, as a terminal's Ctrl-C would find it
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while _lines(results) < 2:
        assert process.poll() is None, f"the run ended early: {process.communicate()}"
        assert time.monotonic() < deadline, "no result lines after 120 s"
        time.sleep(0.05)
    children = _children(process.pid)
    os.kill(process.pid, sig)
    _, stderr = process.communicate(timeout=60)
    assert 2 <= _lines(results) < 6, "the run was not stopped mid-way"
    return process.returncode, children, stderr


def _resume_and_check(out: Path, command: list[str], clean: list[dict]) -> None:
    before = _lines(out / "results.jsonl")
    resumed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert re.search(rf"\({6 - before} run now, {before} resumed\)", resumed.stdout)
    lines = (out / "results.jsonl").read_text().splitlines()
    ids = [json.loads(line)["episode_id"] for line in lines]
    assert len(ids) == len(set(ids)) == 6  # nothing lost, nothing twice
    assert_same_records(RunStore(out).read_results(), clean)
    assert sorted(p.name for p in (out / "traces").iterdir()) == sorted(
        f"{f}_dev_{i}_r0.jsonl" for f in ("lg", "wild") for i in range(3))


def test_a_killed_run_resumes_without_losing_or_repeating_an_episode(tmp_path, clean_run):
    out = tmp_path / "run"
    command = evaluate_command(out, "--workers", "2", "--policy-option", "sleep=0.12")
    status, workers, _ = _stop_after_some_lines(out, command, signal.SIGKILL)
    assert status == -signal.SIGKILL and len(workers) >= 1
    deadline = time.monotonic() + 20  # orphaned workers notice and exit
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)
    _resume_and_check(out, command, clean_run[1])


def test_an_interrupted_run_resumes_without_losing_or_repeating_an_episode(tmp_path,
                                                                          clean_run):
    out = tmp_path / "run"
    command = evaluate_command(out, "--policy-option", "sleep=0.12")
    status, _, stderr = _stop_after_some_lines(out, command, signal.SIGINT)
    assert status == 130 and "interrupted" in stderr
    _resume_and_check(out, command, clean_run[1])


# ---- Ray ------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.machine_wide("ray")  # one local Ray at a time (pytest -n)
def test_ray_backend_writes_the_same_results_as_the_local_backend(tmp_path, clean_run):
    pytest.importorskip("ray")
    out = tmp_path / "ray"
    summary = run_fisher(out, count=3, workers=2, backend="ray")
    records = RunStore(out).read_results()
    assert summary.ran == 6 and all(r["worker"].startswith("ray:") for r in records)
    assert_same_records(records, clean_run[1])
    clean_dir = clean_run[0]
    for record in records:  # the traces hold the same actions and outcomes
        ray_trace, local_trace = read_trace(out / record["trace"]), read_trace(
            clean_dir / record["trace"])
        assert [s["action"] for s in ray_trace.steps] == [s["action"] for s in local_trace.steps]
        assert [s["output_sha256"] for s in ray_trace.steps] == [
            s["output_sha256"] for s in local_trace.steps]
        assert ray_trace.end["scores"] == local_trace.end["scores"]
    again = run_fisher(out, count=3, workers=2, backend="ray")  # resume: nothing to run
    assert (again.ran, again.resumed) == (0, 6)


@pytest.mark.slow
@pytest.mark.machine_wide("ray")  # one local Ray at a time (pytest -n)
def test_a_cluster_of_two_raylets_reached_by_address_runs_the_job_as_the_local_backend(
        tmp_path, clean_run):
    """A real Ray cluster on this machine — a head and a worker node, two raylets with one
    CPU each — reached by a separate driver process, ``heuresis evaluate --backend ray
    --address``, as a user would: the same results as the in-process run, from two actors
    (one per raylet: each node has one CPU and an actor needs one)."""
    pytest.importorskip("ray")
    if any(ch.isspace() for ch in sys.executable):
        # a driver reaching a cluster by address ships a runtime_env, and Ray starts such
        # workers through a shell line built from the raylet's interpreter path: a space in
        # it ("/tmp/ci check/...") kills every worker at start (raylet.err: "bash: line 1:
        # /tmp/ci: No such file or directory"); see docs/evaluation.md
        pytest.skip("Ray cannot start runtime_env workers from an interpreter path with a "
                    f"space ({sys.executable!r}); the cluster test needs a path without one")
    import ray
    from ray.cluster_utils import Cluster

    # the cluster writes its address where a bare ray.init() looks: put back what was there
    address_file = Path(ray._private.utils.get_ray_address_file(None))
    previous = address_file.read_text() if address_file.exists() else None
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "include_dashboard": False})
    out = tmp_path / "cluster"
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        # without an address a run starts its own Ray even while this cluster is up and
        # named in the address file a bare ray.init() would join
        alone = run_fisher(tmp_path / "own-ray", families=["lg"], count=1, backend="ray")
        assert alone.ran == 1
        assert RunStore(tmp_path / "own-ray").read_results()[0]["worker"].startswith("ray:")
        command = [sys.executable, "-m", "heuresis_env.cli", "evaluate", "--policy", FISHER,
                   "--family", "lg", "--split", "dev", "--count", "2", "--d", "4", "--n", "100",
                   "--max-steps", "20", "--max-seconds", "60", "--workers", "2",
                   "--backend", "ray", "--address", cluster.address, "--out", str(out),
                   "--no-progress"]
        completed = subprocess.run(command, cwd=Path(__file__).resolve().parents[2],
                                   capture_output=True, text=True, timeout=300)
        assert completed.returncode == 0, completed.stderr[-3000:]
    finally:
        cluster.shutdown()
        if address_file.exists() and address_file.read_text() == cluster.address:
            if previous is None:
                address_file.unlink()
            else:
                address_file.write_text(previous)
    records = RunStore(out).read_results()
    assert len(records) == 2 and all(r["worker"].startswith("ray:") for r in records)
    assert len({r["worker"] for r in records}) == 2  # two actors, so both raylets
    # the in-process run is at the same budgets (SETTINGS) and size (SMALL)
    expected = [r for r in clean_run[1] if r["family"] == "lg" and r["index"] < 2]
    assert_same_records(records, expected)


def test_a_transcript_that_is_not_json_is_an_episode_error_and_a_string_otherwise():
    from tests.evaluation.eval_policies import FisherSkeleton

    class Cyclic(FisherSkeleton):
        def transcript(self):
            loop: list = []
            loop.append(loop)
            return [{"kind": "note", "loop": loop}]

    class Plain(FisherSkeleton):
        def transcript(self):
            return [{"kind": "note", "p": float("nan"), "pair": ("X1", "X2")}]

    spec = episode_module.RunSpec(policy="cyclic", policy_options={}, settings=SETTINGS,
                                  d=4, n=100)
    task = episode_module.EpisodeTask("lg/dev/0", "lg", "dev", 0, 0, 0)
    outcomes = []
    for policy in (Cyclic(), Plain()):
        runner = episode_module.EpisodeRunner(spec, "test", policy=policy)
        try:
            outcomes.append(runner.run(task))
        finally:
            runner.close()
    cyclic, plain = outcomes
    assert cyclic.transcript_text is None and cyclic.record["finished"]
    assert "cannot be stored as JSON" in cyclic.record["error"]
    assert cyclic.record["scores"] == plain.record["scores"]  # the episode itself ran
    assert plain.record["error"] is None
    assert plain.transcript_text == '[{"kind":"note","p":"nan","pair":["X1","X2"]}]\n'
