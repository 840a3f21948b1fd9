"""An evaluated policy reaches neither the truth nor the test salt (issue 18).

A policy written to cheat (``eval_policies.TruthSeeker``) tries every route the attack found
— the environment object and its referee, the instance memo, the key plus the public
generator, the salt in its environment or in any process's, the runner's memory, the runner's
cache and run directory, planting a cache entry the runner would load — and is run through
``heuresis evaluate`` on a sealed test split, started the way a user starts it (the salt in
the command's environment). Under namespace isolation it finds nothing at all; under the plain
process isolation it finds nothing in memory or environments, and the files it can still read
are the ones ``docs/evaluation.md`` lists. A played table's graph file reads as empty to it;
the ideal oracle, which needs the truth, runs on the referee's side as a marked reference.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from heuresis_env.env.core import HeuresisEnv
from heuresis_env.evaluation import evaluate, evaluate_many
from heuresis_env.evaluation.policies import registered_policies, registered_references
from heuresis_env.evaluation.policy_process import (
    PUBLIC_RESET_INFO,
    confinement_available,
    policy_environment,
)
from heuresis_env.evaluation.run_format import load_run
from heuresis_env.generation.instances import TEST_SALT_ENV
from heuresis_env.policy import EpisodeSettings, run_episode
from tests.evaluation.eval_policies import TruthSeeker

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ("import sys\nfrom heuresis_env import cli\n"
            "sys.exit(cli.main(sys.argv[1:]))\n")
SEEKER = "tests.evaluation.eval_policies:TruthSeeker"


def run_seeker(tmp_path: Path, isolation: str) -> tuple[Path, str, list[dict]]:
    secret = uuid.uuid4().hex + uuid.uuid4().hex  # a random token, as `heuresis salt` prints
    out, cache = tmp_path / "runs" / "seeker", tmp_path / "cache"
    (cache / "evidence").mkdir(parents=True)
    (cache / "evidence" / "an-entry.pkl").write_bytes(b"the runner's cache")
    command = [sys.executable, "-c", LAUNCHER, "evaluate", "--policy", SEEKER,
               "--policy-option", f"run_dir={out}", "--policy-option", f"runner_cache={cache}",
               "--family", "lg", "--split", "test", "--count", "2", "--repeats", "2",
               "--d", "4", "--n", "100", "--max-steps", "5", "--max-seconds", "120",
               "--out", str(out), "--no-progress", "--policy-isolation", isolation]
    environment = {**os.environ, TEST_SALT_ENV: secret, "HEURESIS_CACHE_DIR": str(cache)}
    completed = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True,
                               text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    run = load_run(out)
    transcripts = [json.loads((out / e.transcript).read_text())[0] for e in run.episodes]
    assert len(transcripts) == 4
    return out, secret, transcripts


def check_memory_and_environments(out: Path, secret: str, transcripts: list[dict]) -> None:
    for found in transcripts:
        assert found["environments"] == 0 and found["referee_closures"] == 0
        assert found["memo_entries"] == 0
        assert not found["regenerated_the_instance"]
        assert found["salt_variables"] == []
        assert found["processes_showing_the_salt"] == []
        assert found["process_memory_readable"] == []
        assert found["saw_final_info"] == []  # the scores never reach a policy
        assert set(found["info_keys"]) <= set(PUBLIC_RESET_INFO)
    run = load_run(out)
    assert all(e.score("f1") == 0.0 for e in run.episodes)  # it submitted the empty graph
    assert run.config["salt_digest"] and not run.config["reference"]
    for path in out.rglob("*"):  # the salt is nowhere in the run directory
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


@pytest.mark.skipif(bool(confinement_available()),
                    reason=f"namespaces unavailable: {confinement_available()}")
def test_a_confined_policy_finds_no_route_to_the_truth(tmp_path):
    out, secret, transcripts = run_seeker(tmp_path, "namespaces")
    check_memory_and_environments(out, secret, transcripts)
    for found in transcripts:
        assert found["runner_cache"] == [] and found["run_dir"] == []
        assert not found["planted_in_runner_cache"]
    assert load_run(out).config["policy_isolation"] == "namespaces"
    assert not (tmp_path / "cache" / "evidence" / "planted.pkl").exists()


@pytest.mark.skipif(bool(confinement_available()),
                    reason=f"namespaces unavailable: {confinement_available()}")
def test_a_confined_policy_cannot_read_a_data_tables_graph_file(tmp_path):
    """A CSV table played with ``--graph``: the graph file is the truth, and it reads as empty
    in the policy process (while the episode is still scored against it)."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=150)
    b = a + rng.normal(size=150)
    table, graph = tmp_path / "cells.csv", tmp_path / "cells_graph.txt"
    table.write_text("dose,marker\n" + "\n".join(f"{x:.5f},{y:.5f}" for x, y in zip(a, b)))
    graph.write_text("dose --> marker\n")
    out = tmp_path / "runs" / "table"
    evaluate(SEEKER, split="test", out_dir=out, progress=False,
             settings=EpisodeSettings(max_steps=5, max_seconds=120.0),
             policy_options={"graph_file": str(graph)}, policy_isolation="namespaces",
             datasets=[{"path": table, "graph": graph}])
    (episode,) = load_run(out).episodes
    found = json.loads((out / episode.transcript).read_text())[0]
    assert found["graph_file"] == "" and graph.read_text() == "dose --> marker\n"
    assert episode.score("f1") == 0.0  # scored against the graph: the empty submission


@pytest.mark.skipif(bool(confinement_available()),
                    reason=f"namespaces unavailable: {confinement_available()}")
def test_a_confined_policy_in_a_job_of_several_runs_sees_no_other_run(tmp_path, monkeypatch):
    """`heuresis demo`'s way: several runs on one pool of workers. The cheater plays after
    another run on the same workers, and looks at that run's directory too (its results hold
    the other policy's scores on the same instances)."""
    secret = uuid.uuid4().hex + uuid.uuid4().hex  # a random token, as `heuresis salt` prints
    cache, other, out = tmp_path / "cache", tmp_path / "runs" / "other", tmp_path / "runs" / "seeker"
    (cache / "evidence").mkdir(parents=True)
    monkeypatch.setenv(TEST_SALT_ENV, secret)
    monkeypatch.setenv("HEURESIS_CACHE_DIR", str(cache))
    common = {"split": "test", "families": ["lg"], "d": 4, "n": 100,
              "settings": EpisodeSettings(max_steps=5, max_seconds=120.0),
              "policy_isolation": "namespaces"}
    evaluate_many([{**common, "policy_spec": "tests.evaluation.eval_policies:fisher_skeleton",
                    "out_dir": other, "count": 4},
                   {**common, "policy_spec": SEEKER, "out_dir": out, "count": 2, "repeats": 2,
                    "policy_options": {"run_dir": str(other), "runner_cache": str(cache)}}],
                  workers=2, progress=False)
    run = load_run(out)
    transcripts = [json.loads((out / e.transcript).read_text())[0] for e in run.episodes]
    assert len(transcripts) == 4
    check_memory_and_environments(out, secret, transcripts)
    for found in transcripts:  # the other run's directory (never empty: its lock) is covered
        assert found["run_dir"] == [] and found["runner_cache"] == []
        assert not found["planted_in_runner_cache"]
    assert os.listdir(other)  # it is there, for everyone but the policies
    workers = {e.worker for r in (run, load_run(other)) for e in r.episodes}
    assert len(workers) <= 2  # one pool served both runs


def test_a_policy_in_a_plain_process_finds_nothing_in_memory_or_environments(tmp_path):
    out, secret, transcripts = run_seeker(tmp_path, "process")
    check_memory_and_environments(out, secret, transcripts)
    assert load_run(out).config["policy_isolation"] == "process"
    # what docs/evaluation.md says a plain process can still do: read and write the user's
    # files, the runner's cache and run directory included (namespaces close this)
    assert "evidence" in transcripts[0]["runner_cache"]


def test_the_policy_process_environment_holds_no_salt(monkeypatch):
    monkeypatch.setenv(TEST_SALT_ENV, "s3cret-salt")
    monkeypatch.setenv("SOME_TOOL_CONFIG", "key=s3cret-salt")
    monkeypatch.setenv("HEURESIS_CACHE_DIR", "/somewhere/cache")
    environment = policy_environment("s3cret-salt")
    assert TEST_SALT_ENV not in environment and "SOME_TOOL_CONFIG" not in environment
    assert environment["HEURESIS_CACHE_DIR"] == "/somewhere/cache-policies"
    assert not any("s3cret-salt" in value for value in environment.values())


def test_in_process_the_same_policy_reaches_the_truth_of_a_public_split():
    """The contrast docs/environment.md states: a policy holding the environment object (in
    its own process, for development) can reach the truth of the public splits."""
    env = HeuresisEnv(family="lg", split="dev", d=4, n=100)
    seeker = TruthSeeker()
    result = run_episode(env, seeker, seed=0, options={"index": 0})
    assert seeker.found["environments"] >= 1 and seeker.found["regenerated_the_instance"]
    assert result.scores["f1"] == 1.0


def test_the_oracle_runs_on_the_referees_side_as_a_marked_reference(tmp_path, monkeypatch):
    """The ideal oracle needs the truth by definition: it is registered as a reference (not a
    policy), gets each instance on the referee's side — the sealed split included, with no
    salt handed to it — and its run and every result line are marked as a reference."""
    assert "oracle" in registered_references() and "oracle" not in registered_policies()
    monkeypatch.setenv(TEST_SALT_ENV, uuid.uuid4().hex + uuid.uuid4().hex)
    out = tmp_path / "oracle"
    evaluate("oracle", families=["lg"], split="test", count=2, d=5, n=200, out_dir=out,
             settings=EpisodeSettings(max_steps=5, max_seconds=120.0), progress=False)
    run = load_run(out)
    assert run.config["reference"] is True and run.config["policy_isolation"] == "referee"
    assert run.config["salt_digest"]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all(r["reference"] is True for r in records)
    assert all(r["error"] is None and r["termination_reason"] == "submitted" for r in records)
    assert all(r["scores"]["recall"] == 1.0 for r in records)  # it restores every true edge
