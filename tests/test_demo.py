"""The main job (`heuresis demo`) end to end at a tiny size, and the shipped RL repair policy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from heuresis_env.evaluation.policies import make_policy, registered_policies


def test_the_shipped_rl_policy_is_registered_and_loads_without_options():
    assert "rl" in registered_policies()
    policy = make_policy("rl", {})
    assert policy.interface == "rl"
    shipped = json.loads((Path(sys.modules[type(policy).__module__].SHIPPED_MODEL_DIR)
                          / "report.json").read_text())
    # the default model's own training report: the all-family policy on the repair table,
    # trained on dev instances of the six families, tested on test instances
    assert shipped["family"] == "all" and policy.d == shipped["d"] == 10
    assert policy.layout == 2 and len(shipped["test_indices"]) >= 22


@pytest.mark.slow
def test_demo_runs_policies_with_the_rl_policy_guided_and_prints_the_headline(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run(
        # n = 200, the default size: BCA_φ reads its shipped selection (at a size without one
        # it would select on the fly, running every algorithm on 10 dev instances per family,
        # which tests/baselines covers)
        [sys.executable, "-m", "heuresis_env.cli", "demo", "--count", "1", "--n", "200",
         "--workers", "1", "--max-steps", "20", "--no-llm", "--out", str(out),
         "--policies", "pc-kci,bca,oracle,router,rl,amortized,amortized-repair"],
        capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = ("pc-kci", "bca", "oracle", "router", "rl", "amortized", "amortized-repair")
    for run in runs:
        config = json.loads((out / "runs" / run / "config.json").read_text())
        lines = (out / "runs" / run / "results.jsonl").read_text().splitlines()
        assert len(lines) == 6  # one instance of each family
        assert config["settings"]["guided"] is (run in ("rl", "amortized-repair"))
        assert config["settings"]["max_steps"] == 20
    assert (out / "report" / "report.md").is_file() and (out / "report" / "report.html").is_file()
    assert "router" in proc.stdout and "rl" in proc.stdout
    assert "7 policies × 6 families × 1 instances" in proc.stdout
    # it ends by printing the trace viewer's path, and the report links into the viewer
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith(f"viewer: {out / 'viewer' / 'index.html'} ")
    assert len(list((out / "viewer" / "episodes").glob("*.js"))) == 7 * 6
    assert 'href="../viewer/index.html#' in (out / "report" / "report.html").read_text()


def _demo(out: Path, *extra: str, env: dict | None = None,
          workers: int = 1) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "heuresis_env.cli", "demo", "--count", "1", "--workers",
         str(workers), "--max-steps", "12", "--out", str(out), *extra],
        capture_output=True, text=True, timeout=1200, env=env)


@pytest.mark.slow
def test_demo_adds_a_configured_llm_and_notes_what_it_cannot_run(tmp_path):
    import os

    from agents.llm.heuristic_model import HeuristicModel
    from agents.llm.server import HEURISTIC_MODEL_NAME, ChatServer

    base = {k: v for k, v in os.environ.items()
            if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HEURESIS_LLM_BASE_URL",
                         "HEURESIS_LLM_MODEL", "HEURESIS_LLM_BACKEND")}
    # a key without a model: the language-model policy is a note, the rest of the job runs;
    # at d = 5 the shipped RL policy (trained at d = 10) is a note too
    proc = _demo(tmp_path / "keyonly", "--d", "5", "--n", "100",
                 "--policies", "pc-fisherz,rl,llm", env={**base, "OPENAI_API_KEY": "sk-not-a-key"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "the language-model policy is skipped" in proc.stderr
    assert "HEURESIS_LLM_MODEL" in proc.stderr
    assert "the RL repair policy is skipped (trained at d = 10" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "keyonly" / "runs").iterdir()) == ["pc-fisherz"]

    # a local OpenAI-compatible server: the main job's own list gains the language-model
    # policy (BCA_φ left out: at d = 5 it has no shipped selection and would select on the
    # fly); two workers, one pool for all the policies
    server = ChatServer(responder=HeuristicModel(), model=HEURISTIC_MODEL_NAME)
    try:
        proc = _demo(tmp_path / "server", "--d", "5", "--n", "100", "--no-rl", "--skip", "bca",
                     workers=2, env={**base, "HEURESIS_LLM_BASE_URL": server.url,
                                     "HEURESIS_LLM_MODEL": HEURISTIC_MODEL_NAME,
                                     "OPENAI_API_KEY": "loopback"})
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = (tmp_path / "server" / "runs" / "llm" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 6
    assert all(json.loads(line)["tokens"] for line in lines)  # usage from the API's fields
    assert "| llm |" in proc.stdout and "17 policies × 6 families × 1 instances" in proc.stdout
    runs = {p.name for p in (tmp_path / "server" / "runs").iterdir()}
    assert "llm" in runs and "bca" not in runs and len(runs) == 17
    # the job's policies shared one pool: at most two worker processes ran all the episodes
    workers = {json.loads(line)["worker"]
               for run in runs
               for line in (tmp_path / "server" / "runs" / run / "results.jsonl")
               .read_text().splitlines()}
    assert 1 <= len(workers) <= 2
