"""Route 4: the MCP server as a score oracle. On a sealed test split ``submit`` ends the
instance and returns no score, its trace files hold none either (a client that can read the
trace folder learns nothing), an instance played once cannot be played again (no replay to
probe scores), ``heuresis score`` gives the scores after the session; the HTTP transport
answers only requests that carry the bearer token it printed at start."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from heuresis_env.generation.salts import TEST_SALT_ENV, new_salt
from tests.servers import free_port, wait_until_listening

mcp = pytest.importorskip("mcp", reason="the MCP SDK is the 'mcp' extra: pip install -e '.[mcp]'")
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import (  # noqa: E402
    create_mcp_http_client,
    streamable_http_client,
)

ROOT = Path(__file__).resolve().parents[2]
D, N = 4, 100
SCORE_WORDS = ("f1", "precision", "recall", "shd")


def server_args(trace_dir: Path, *extra: str) -> list[str]:
    return ["-m", "heuresis_env.cli", "mcp", "--family", "lg", "--split", "test", "--d", str(D),
            "--n", str(N), "--index", "1", "--max-steps", "6", "--trace-dir", str(trace_dir),
            *extra]


def _keys(node) -> set:
    """Every key of every object within a JSON value."""
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def test_a_sealed_session_returns_no_score_and_replays_no_instance(tmp_path):
    salt, traces = new_salt(), tmp_path / "traces"
    environment = {**os.environ, TEST_SALT_ENV: salt}
    seen: dict = {}

    async def session() -> None:
        params = StdioServerParameters(command=sys.executable, args=server_args(traces),
                                       env=environment, cwd=str(ROOT))
        async with Client(params) as client:
            seen["submit"] = await client.call_tool("submit", {"edges": ["X1 --- X2"]})
            seen["after"] = await client.call_tool("ci_test", {"x": "X1", "y": "X2"})
            seen["replay"] = await client.call_tool("reset", {"index": 1})
            seen["other"] = await client.call_tool("reset", {"index": 2})
            seen["abandon"] = await client.call_tool("reset", {"index": 3})
            seen["replay_aborted"] = await client.call_tool("reset", {"index": 2})

    anyio.run(session)
    submit = seen["submit"]
    assert submit.structured_content["episode_over"] is True
    assert "scores" not in submit.structured_content
    text = submit.content[0].text.lower()
    assert "heuresis score" in text and not any(f"{w} =" in text for w in SCORE_WORDS)
    assert seen["after"].is_error and "f1" not in seen["after"].content[0].text.lower()
    assert seen["replay"].is_error and "already played" in seen["replay"].content[0].text
    assert not seen["other"].is_error
    assert seen["replay_aborted"].is_error  # an abandoned instance cannot be replayed either
    # the trace files carry no score: the end records say they were withheld
    files = sorted(traces.glob("*.jsonl"))
    assert len(files) == 3
    for file in files:
        records = [json.loads(line) for line in file.read_text().splitlines()]
        assert not _keys(records) & {*SCORE_WORDS, "scores", "nshd", "question"}
        end = records[-1]
        assert end["type"] == "end" and end["scores_withheld"] is True and end["final_graph"]
    # afterwards, with the salt, the scores of the session
    scored = subprocess.run([sys.executable, "-m", "heuresis_env.cli", "score", str(traces)],
                            cwd=ROOT, env=environment, capture_output=True, text=True,
                            timeout=300)
    assert scored.returncode == 0, scored.stderr
    lines = scored.stdout.strip().splitlines()
    assert len(lines) == 3 and all("f1 = " in line for line in lines)
    without = subprocess.run([sys.executable, "-m", "heuresis_env.cli", "score", str(traces)],
                             cwd=ROOT, env={k: v for k, v in environment.items()
                                            if k != TEST_SALT_ENV},
                             capture_output=True, text=True, timeout=300)
    assert without.returncode == 2 and TEST_SALT_ENV in without.stderr
    replayed = subprocess.run([sys.executable, "-m", "heuresis_env.cli", "replay", str(files[0])],
                              cwd=ROOT, env=environment, capture_output=True, text=True,
                              timeout=300)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "withheld" in replayed.stdout and "graph identical" in replayed.stdout


def test_a_dev_session_still_returns_scores(tmp_path):
    from heuresis_env.mcp.server import EpisodeServer

    server = EpisodeServer(family="lg", split="dev", d=D, n=N, trace_dir=tmp_path, index=0)
    try:
        reply = server.call("submit", {"edges": ["X1 --- X2"]})
        assert "f1" in reply.data["scores"]
        end = json.loads(server.trace_file.read_text().splitlines()[-1])
        assert end["scores"] == reply.data["scores"]  # dev: the trace keeps them
        assert not server.call("reset", {"index": 0}).is_error  # dev: replay allowed
    finally:
        server.close()


def _http_status(port: int, headers: dict[str, str]) -> int:
    import httpx

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    reply = httpx.post(f"http://127.0.0.1:{port}/mcp", json=body, timeout=30,
                       headers={"Accept": "application/json, text/event-stream", **headers})
    return reply.status_code


def test_the_http_transport_requires_the_token_printed_at_start(tmp_path):
    port = free_port()
    log_path = tmp_path / "server.log"
    environment = {k: v for k, v in os.environ.items() if k != "HEURESIS_MCP_TOKEN"}
    with open(log_path, "w") as log:
        server = subprocess.Popen([sys.executable, *server_args(
            tmp_path / "traces", "--split", "dev", "--transport", "http", "--port", str(port))],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=environment)
    try:
        wait_until_listening(server, port, log_path)
        found = re.search(r"token (\S+)", log_path.read_text())
        assert found, log_path.read_text()
        token = found.group(1)
        assert _http_status(port, {}) == 401
        assert _http_status(port, {"Authorization": "Bearer not-the-token-at-all"}) == 401
        assert _http_status(port, {"Authorization": token}) == 401  # the scheme is required
        out: dict = {}

        async def session() -> None:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp",
                                                     http_client=http)) as client:
                out["tools"] = {t.name for t in (await client.list_tools()).tools}

        anyio.run(session)
        assert {"ci_test", "submit", "reset"} <= out["tools"]
    finally:
        server.terminate()
        server.wait(timeout=30)
