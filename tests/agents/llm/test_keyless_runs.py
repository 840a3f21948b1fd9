"""A newcomer without a key (issue 42, item 3): ``heuresis evaluate --policy llm`` names the
keyless backends in the command line's own syntax, the hinted command runs — the stand-in's
in-process server is reached on the policy's own loopback, not refused by the endpoint proxy —
and a run whose every episode errored exits non-zero. Each runs ``heuresis evaluate`` as a
user starts it, in a subprocess."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from agents.llm.server import ChatServer, http_error
from heuresis_env.evaluation.policy_process import confinement_available
from heuresis_env.evaluation.run_format import load_run
from heuresis_env.isolation import policy_endpoints

ROOT = Path(__file__).resolve().parents[3]
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HEURESIS_LLM_BASE_URL",
                 "HEURESIS_LLM_BACKEND", "HEURESIS_LLM_MODEL", "OPENAI_BASE_URL",
                 "ANTHROPIC_BASE_URL")
SMALL = ["--family", "lg", "--split", "dev", "--count", "1", "--d", "4", "--n", "100",
         "--max-steps", "4", "--workers", "1", "--no-progress"]
ISOLATIONS = ["process", pytest.param("namespaces", marks=pytest.mark.skipif(
    confinement_available() is not None,
    reason=f"no namespaces here: {confinement_available()}"))]


def evaluate(tmp_path: Path, *arguments: str, environment: dict | None = None
             ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}
    env.update(HEURESIS_CACHE_DIR=str(tmp_path / "cache"), **(environment or {}))
    return subprocess.run([sys.executable, "-m", "heuresis_env.cli", "evaluate", *arguments],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_a_keyless_backend_needs_no_endpoint():
    for backend in ("heuristic", "local"):
        assert policy_endpoints("llm", {"backend": backend}, False, {}) == ()
        assert policy_endpoints("llm", {}, False, {"HEURESIS_LLM_BACKEND": backend}) == ()
    assert policy_endpoints("llm", {"backend": "openai"}, False, {}) == (
        "api.openai.com:443", "api.anthropic.com:443")
    assert policy_endpoints("llm", {"backend": "local", "base_url": "http://127.0.0.1:8642/v1"},
                            False, {}) == ("127.0.0.1:8642",)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_the_no_key_hint_is_a_command_that_runs(tmp_path, isolation):
    """The error names the keyless backends as ``--policy-option`` flags; the first, copied
    from the message as it is, plays an episode that submits (it failed with HTTP 403 from the
    endpoint proxy and exited 0). A proxy in the user's environment is not used for the
    policy's own server either."""
    refused = evaluate(tmp_path, "--policy", "llm", *SMALL, "--out", str(tmp_path / "none"))
    assert refused.returncode != 0
    message = refused.stderr
    assert "no language-model service is configured" in message
    hinted = re.findall(r"--policy-option [a-z_]+=[A-Za-z0-9.-]+", message)
    assert "--policy-option backend=heuristic" in hinted
    assert "--policy-option model=smollm2-135m" in hinted
    assert "backend='heuristic'" not in message  # Python's syntax, not the command line's
    out = tmp_path / "heuristic"
    result = evaluate(tmp_path, "--policy", "llm", *shlex.split(hinted[hinted.index(
        "--policy-option backend=heuristic")]), *SMALL, "--policy-isolation", isolation,
        "--out", str(out), environment={"HTTP_PROXY": "http://127.0.0.1:9",
                                        "HTTPS_PROXY": "http://127.0.0.1:9"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "not a declared endpoint" not in result.stderr
    episodes = load_run(out).episodes
    assert len(episodes) == 1 and episodes[0].error is None
    assert episodes[0].termination_reason == "submitted" and episodes[0].prompt_tokens > 0


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_run_whose_every_episode_errored_exits_non_zero(tmp_path, isolation):
    """A server that refuses the key (401, fatal) errors every episode: the run exits 1 and
    says so. The server is on the host's loopback, declared by the base_url option, so a
    confined policy reaches it through the endpoint proxy."""
    with ChatServer(responder=lambda request: http_error(401, "invalid api key")) as server:
        result = evaluate(tmp_path, "--policy", "llm", "--policy-option",
                          f"base_url={server.url}", "--policy-option", "model=anything",
                          *SMALL, "--policy-isolation", isolation, "--out",
                          str(tmp_path / "refused"))
        assert server.requests, "the policy never reached the declared server"
    assert result.returncode == 1, result.stderr[-3000:]
    assert "every episode of the run errored (1 of 1" in result.stderr
    assert "401" in result.stdout


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_local_model_policy_with_a_base_url_is_a_client_of_that_server(tmp_path, isolation):
    """``backend=local`` with ``base_url`` (how ``heuresis llm-compare`` shares one server per
    model among its episode workers) loads no model: every call goes to the server named,
    through the endpoint proxy when the policy is confined (it used to load the model in the
    policy's own process and never call the server)."""
    from agents.llm.heuristic_model import HeuristicModel

    with ChatServer(responder=HeuristicModel()) as server:
        out = tmp_path / "shared"
        result = evaluate(tmp_path, "--policy", "llm", "--policy-option", "backend=local",
                          "--policy-option", "model=smollm2-135m", "--policy-option",
                          f"base_url={server.url}", *SMALL, "--policy-isolation", isolation,
                          "--out", str(out))
        served = [r for r in server.requests if r.status == 200]
    assert result.returncode == 0, result.stderr[-3000:]
    assert served and all(r.body["model"] == "smollm2-135m" for r in served)
    episodes = load_run(out).episodes
    assert len(episodes) == 1 and episodes[0].error is None
    assert episodes[0].termination_reason == "submitted" and episodes[0].prompt_tokens > 0
