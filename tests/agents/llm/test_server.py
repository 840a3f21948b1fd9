"""The loopback chat server's heuristic model (agents.llm.server): an episode end to end, and
under the evaluation runner."""

from __future__ import annotations

import json

import numpy as np

from agents.llm.policy import make_heuristic_llm_policy
from heuresis_env.discovery.algorithms import run_algorithm
from heuresis_env.evaluation.episode import EpisodeRunner, EpisodeTask, RunSpec
from heuresis_env.graphs import Graph
from heuresis_env.policy import EpisodeSettings
from tests.agents.llm.llm_fixtures import make_env, play


def test_heuristic_model_plays_an_episode_end_to_end():
    settings = EpisodeSettings(max_steps=20, max_seconds=300, prompt_level=4)
    policy = make_heuristic_llm_policy()
    try:
        result = play(policy, settings)
    finally:
        policy.close()
    assert result.termination_reason == "submitted"
    tools = [e["action"]["tool"] for e in policy.transcript() if e["event"] == "action"]
    assert tools[:2] == ["run_algorithm", "run_algorithm"] and tools[-1] == "submit"
    assert 3 <= len(tools) <= 6
    env = make_env(settings)
    _, info = env.reset(seed=0, options={"index": 0})
    env.close()
    pc_kci = run_algorithm("pc-kci", info["data"], info["names"])
    submitted = Graph.from_dict(result.final_graph).skeleton()
    assert np.all(submitted[pc_kci.graph.skeleton()])  # PC-KCI's edges are all kept
    assert policy.usage()["cost_usd"] == 0.0 and policy.usage()["model_calls"] == len(tools)


def test_heuristic_policy_under_the_evaluation_runner():
    settings = EpisodeSettings(max_steps=4, max_seconds=300)
    spec = RunSpec(policy="llm-heuristic", policy_options={}, settings=settings, d=5, n=200)
    policy = make_heuristic_llm_policy(native_tools=False)
    runner = EpisodeRunner(spec, "test", policy=policy)
    try:
        outcome = runner.run(EpisodeTask("wild/dev/0", "wild", "dev", 0, 0, 0))
    finally:
        runner.close()
    record = outcome.record
    assert record["error"] is None and record["termination_reason"] == "submitted"
    assert record["tokens"]["prompt"] > 0 and record["cost_usd"] == 0.0
    assert record["api_retries"] == 0
    assert any(e["event"] == "model_call" for e in json.loads(outcome.transcript_text))


def test_the_server_is_a_command_a_policy_can_reach(tmp_path):
    """``heuresis llm-server`` in its own process on a chosen port: the language-model policy
    of a run reaches it by URL (as a user points HEURESIS_LLM_BASE_URL at it); a second
    evaluate of the same run directory through another port resumes (the URL is how to reach
    the model, not part of the run's identity); SIGTERM stops it cleanly."""
    import signal
    import socket
    import subprocess
    import sys

    from heuresis_env.evaluation import evaluate

    def serve() -> tuple[subprocess.Popen, str]:
        with socket.socket() as probe:  # a free port, as a user would pick one
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        process = subprocess.Popen([sys.executable, "-m", "heuresis_env.cli", "llm-server",
                                    "--port", str(port)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        first = process.stdout.readline()
        assert first.startswith("heuresis llm-server: the heuristic model"), first
        assert f"http://127.0.0.1:{port}" in first
        return process, f"http://127.0.0.1:{port}/v1"

    settings = EpisodeSettings(max_steps=4, max_seconds=300)
    for attempt in (1, 2):  # the second run resumes the first, with the server on a new port
        process, url = serve()
        try:
            summary = evaluate("llm", families=["lg"], split="dev", count=1, d=4, n=100,
                               settings=settings, out_dir=tmp_path / "run", progress=False,
                               policy_options={"backend": "openai", "base_url": url,
                                               "api_key": "loopback",
                                               "model": "heuresis-heuristic"})
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=30)
        assert process.returncode == 0 and "stopped after" in err
        assert summary.overall.episodes == 1 and summary.overall.errors == 0
        assert summary.resumed == attempt - 1


def test_a_client_that_hangs_up_mid_request_is_not_an_error(capsys):
    """A policy whose time is up closes its connection (a reset, mid-request): normal, so the
    server prints no traceback — a full comparison printed one per timed-out call — and goes
    on answering."""
    import socket
    import struct
    import time
    import urllib.request

    from agents.llm.server import ChatServer

    with ChatServer(model="scripted") as server:
        for _ in range(3):
            client = socket.create_connection(("127.0.0.1", server.port))
            client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-")
            time.sleep(0.05)  # the server is reading the request's headers
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()  # linger 0: a reset, not an orderly close
        time.sleep(0.3)
        with urllib.request.urlopen(f"{server.root_url}/v1/models", timeout=5) as answer:
            assert answer.status == 200
    err = capsys.readouterr().err
    assert "Traceback" not in err and "ConnectionResetError" not in err, err
