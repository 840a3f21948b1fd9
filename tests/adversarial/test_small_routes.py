"""Route 9, the smaller routes: negative tokens and cost from a policy's ``usage()`` never
reach a run's records or its cost table; ``HEURESIS_CACHE_DIR=.`` or ``/`` is a one-line
error. (Network access of confined policies: ``test_confinement.py``; ``heuresis view
--serve`` and its Host header: ``test_viewer_input.py``.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from heuresis_env.evaluation import evaluate
from heuresis_env.evaluation.episode import usage_fields
from heuresis_env.evaluation.run_format import load_run
from heuresis_env.policy import EpisodeSettings

ROOT = Path(__file__).resolve().parents[2]
POLICY = "tests.adversarial.adversarial_policies:MalformedTranscript"


def test_negative_usage_never_reaches_the_records(tmp_path):
    out = tmp_path / "run"
    evaluate(POLICY, families=["lg"], split="dev", count=1, out_dir=out, d=4, n=100,
             settings=EpisodeSettings(max_steps=5, max_seconds=300.0), progress=False,
             policy_isolation="process")
    (episode,) = load_run(out).episodes
    assert episode.prompt_tokens in (None, 0) and episode.completion_tokens in (None, 0)
    assert episode.cost_usd is None and episode.api_retries is None


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": -1, "completion_tokens": -1, "cost_usd": -0.5, "api_retries": -3},
    {"input_tokens": "-7", "cost_usd": float("nan")}, {"cost_usd": float("-inf")},
    {"tokens": {"prompt": -10, "completion": -2}, "cost_usd": True}])
def test_usage_fields_are_non_negative_or_unknown(usage):
    fields = usage_fields(usage)
    assert fields["cost_usd"] is None and fields["api_retries"] is None
    assert fields["tokens"] is None


def test_honest_usage_is_kept():
    fields = usage_fields({"prompt_tokens": 10, "completion_tokens": 0, "cost_usd": 0.25,
                           "api_retries": 1})
    assert fields == {"tokens": {"prompt": 10, "completion": 0}, "cost_usd": 0.25,
                      "api_retries": 1}


@pytest.mark.parametrize(("value", "what"), [(".", "working folder"), ("/", "root")])
def test_a_cache_dir_of_dot_or_root_is_a_one_line_error(tmp_path, value, what):
    command = [sys.executable, "-m", "heuresis_env.cli", "evaluate", "--policy", "pc-fisherz",
               "--family", "lg", "--count", "1", "--d", "4", "--n", "100", "--out",
               str(tmp_path / "run"), "--no-progress"]
    done = subprocess.run(command, cwd=tmp_path, env={**os.environ, "HEURESIS_CACHE_DIR": value,
                                                      "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "HEURESIS_CACHE_DIR" in done.stderr and what in done.stderr
