"""``heuresis mcp``: the toolbox served over MCP, driven by the official SDK's own client with
the server in a subprocess (stdio, and streamable HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from heuresis_env.env import HeuresisEnv, tool_schemas
from heuresis_env.trace_files import read_trace
from tests.servers import free_port, wait_until_listening

mcp = pytest.importorskip("mcp", reason="the MCP SDK is the 'mcp' extra: pip install -e '.[mcp]'")
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import (  # noqa: E402
    create_mcp_http_client,
    streamable_http_client,
)

D, N, INDEX, STEPS = 5, 200, 2, 8
#: every key a tool result's structured content may hold: nothing from the hidden record
ALLOWED_KEYS = {"step", "steps_left", "tool", "error", "data", "episode_over",
                "termination_reason", "submitted", "scores", "episode", "instance_index",
                "split", "names", "guided", "max_steps", "max_seconds", "seed"}


def server_args(trace_dir: Path, *extra: str) -> list[str]:
    return ["-m", "heuresis_env.cli", "mcp", "--family", "lg", "--d", str(D), "--n", str(N),
            "--index", str(INDEX), "--max-steps", str(STEPS), "--trace-dir", str(trace_dir),
            *extra]


def footer_free(text: str) -> str:
    """The observation text without the server's step line."""
    return text.rsplit("\n\n[step ", 1)[0]


def direct_episode(actions: list[dict]) -> list[tuple[str, dict]]:
    """The same actions on a HeuresisEnv built directly: (observation text, info) per step."""
    env = HeuresisEnv(family="lg", split="dev", d=D, n=N, max_steps=STEPS)
    env.reset(seed=0, options={"index": INDEX})
    out = []
    for action in actions:
        observation, _, _, _, info = env.step(action)
        out.append((observation["text"], info))
    env.close()
    return out


def test_stdio_client_lists_calls_edits_submits_and_reads_the_score(tmp_path):
    traces = tmp_path / "traces"
    actions = [{"tool": "ci_test", "args": {"x": "X1", "y": "X2", "method": "fisherz"}},
               {"tool": "add_edge", "args": {"x": "X1", "y": "X2", "directed": False}},
               {"tool": "add_edge", "args": {"x": "X3", "y": "X4", "evidence": [1]}},
               {"tool": "submit", "args": {}}]
    seen: dict = {}

    async def session() -> None:
        params = StdioServerParameters(command=sys.executable, args=server_args(traces))
        async with Client(params) as client:
            listed = (await client.list_tools()).tools
            seen["tools"] = {t.name: t for t in listed}
            seen["instructions"] = client.instructions
            seen["replies"] = [await client.call_tool(a["tool"], a["args"]) for a in actions]
            # a bad call on a finished episode is an error result; the server lives on
            seen["late"] = await client.call_tool("ci_test", {"x": "X1", "y": "X2"})
            seen["reset"] = await client.call_tool("reset", {"index": 4, "seed": 3})
            seen["unknown"] = await client.call_tool("no_such_tool", {"x": 1})
            seen["bad_args"] = await client.call_tool("ci_test", {"x": "X1", "z": "X9"})
            seen["bad_reset"] = await client.call_tool("reset", {"index": -1})
            seen["after"] = await client.call_tool("describe_data", {})

    anyio.run(session)

    # the tools and their schemas are the registry's (full toolbox, unguided), plus reset
    registry = {s["name"]: s for s in tool_schemas("full", False, "anthropic")}
    assert set(seen["tools"]) == set(registry) | {"reset"}
    for name, schema in registry.items():
        assert seen["tools"][name].input_schema == schema["input_schema"]
        assert seen["tools"][name].description == schema["description"]
    assert "deletion_log" not in seen["tools"]  # guided only
    # titles, behaviour hints and output schemas (the client validated every result above
    # that was not an error against its tool's output schema)
    tools = seen["tools"]
    assert tools["ci_test"].title == "CI test" and tools["run_algorithm"].title == "Run algorithm"
    hints = tools["ci_test"].annotations
    assert hints.read_only_hint and hints.idempotent_hint and not hints.destructive_hint
    assert not hints.open_world_hint
    for name in ("add_edge", "submit", "reset"):
        assert tools[name].annotations.destructive_hint and not tools[name].annotations.read_only_hint
    assert not tools["stability"].annotations.idempotent_hint  # it resamples at random
    # writing the graph memory is not read-only (it replaces a saved graph of the same name)
    for name in ("save_graph", "run_algorithm"):
        hints = tools[name].annotations
        assert not hints.read_only_hint and hints.destructive_hint and hints.idempotent_hint
    assert tools["list_graphs"].annotations.read_only_hint
    assert tools["ci_test"].output_schema["required"] == [
        "step", "steps_left", "tool", "error", "data", "episode_over"]
    assert "names" in tools["reset"].output_schema["required"]
    assert "TASK: recover the causal graph" in seen["instructions"]

    # every step is the environment's own answer: same text and scores as a direct episode
    direct = direct_episode(actions)
    for reply, (text, _info) in zip(seen["replies"], direct, strict=True):
        assert not reply.is_error
        assert footer_free(reply.content[0].text).startswith(text)
        assert set(reply.structured_content) <= ALLOWED_KEYS
    ci = seen["replies"][0].structured_content
    assert ci["data"]["p_value"] == pytest.approx(direct[0][1]["data"]["p_value"])
    assert ci["step"] == 1 and ci["steps_left"] == STEPS - 1
    final = seen["replies"][-1].structured_content
    assert final["episode_over"] and final["termination_reason"] == "submitted"
    assert final["scores"] == pytest.approx(direct[-1][1]["scores"], nan_ok=True)
    assert "Episode over (submitted): f1 = " in seen["replies"][-1].content[0].text

    assert seen["late"].is_error and "episode is over" in seen["late"].content[0].text
    reset = seen["reset"].structured_content
    assert not seen["reset"].is_error and reset["instance_index"] == 4 and reset["seed"] == 3
    assert reset["names"] == [f"X{k + 1}" for k in range(D)]
    assert seen["unknown"].is_error and "unknown tool 'no_such_tool'" in seen[
        "unknown"].content[0].text
    assert seen["bad_args"].is_error and seen["bad_args"].structured_content["step"] == 2
    assert seen["bad_reset"].is_error and "non-negative" in seen["bad_reset"].content[0].text
    assert not seen["after"].is_error and seen["after"].structured_content["step"] == 3

    # the traces are written as usual: one per episode, every call a step, rejected ones too
    files = sorted(traces.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    assert len(files) == 2
    first, second = read_trace(files[0]), read_trace(files[1])
    assert first.header["instance"]["index"] == INDEX and first.header["seed"] == 0
    assert [s["tool"] for s in first.steps] == [a["tool"] for a in actions]
    assert first.steps[2]["evidence"] == [1] and first.steps[2]["evidence_source"] == "explicit"
    assert first.end["termination_reason"] == "submitted"
    assert second.header["instance"]["index"] == 4
    assert [s["tool"] for s in second.steps] == [None, None, "describe_data"]  # unparsed
    assert second.steps[0]["error"] and second.steps[1]["error"]
    assert second.end["termination_reason"] == "aborted"  # closed when the client left


def test_the_step_budget_ends_an_episode_over_mcp(tmp_path):
    replies = []

    async def session() -> None:
        params = StdioServerParameters(command=sys.executable, args=server_args(
            tmp_path / "traces", "--max-steps", "2", "--toolbox", "minimal"))
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            replies.append(names)
            for _ in range(3):
                replies.append(await client.call_tool("describe_data", {}))

    anyio.run(session)
    names, first, second, third = replies
    assert "run_code" not in names and "stability" not in names  # the minimal toolbox
    assert not first.structured_content["episode_over"]
    assert second.structured_content["termination_reason"] == "step_budget"
    assert second.structured_content["scores"]["n_edges"] == 0
    # an empty graph's precision is undefined: JSON null through the real client, never the
    # string "nan" (issue 42)
    assert second.structured_content["scores"]["precision"] is None
    assert "precision = nan" in second.content[0].text
    assert third.is_error


def test_streamable_http_on_loopback(tmp_path):
    port = free_port()
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 - closed below
    token = "k3J9-qZ7vXw2LmP0sT5yRb8NcHd4FgUe"  # a fixed token must not be guessable (issue 46)
    server = subprocess.Popen([sys.executable, *server_args(
        tmp_path / "traces", "--transport", "http", "--port", str(port))],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "HEURESIS_MCP_TOKEN": token})
    try:
        wait_until_listening(server, port, tmp_path / "server.log")
        out: dict = {}

        async def session() -> None:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp",
                                                     http_client=http)) as client:
                out["tools"] = {t.name for t in (await client.list_tools()).tools}
                out["ci"] = await client.call_tool(
                    "ci_test", {"x": "X1", "y": "X2", "method": "fisherz"})
                out["bad"] = await client.call_tool("ci_test", {"x": "X1"})
                out["submit"] = await client.call_tool("submit", {"edges": ["X1 --- X2"]})

        anyio.run(session)
        assert {"ci_test", "submit", "reset"} <= out["tools"]
        direct = direct_episode([{"tool": "ci_test",
                                  "args": {"x": "X1", "y": "X2", "method": "fisherz"}}])
        assert footer_free(out["ci"].content[0].text).startswith(direct[0][0])
        assert out["bad"].is_error
        assert out["submit"].structured_content["scores"]["n_edges"] == 1
        assert json.dumps(out["submit"].structured_content)  # plain JSON
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_traces_go_to_the_user_data_folder_never_the_working_directory(tmp_path):
    """Without --trace-dir the traces go under the user's data folder (platformdirs, here
    $XDG_DATA_HOME), so a GUI client starting the server in any folder writes nothing there;
    --client-config prints a configuration that needs no `heuresis` on PATH."""
    import os

    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    env = {**os.environ, "XDG_DATA_HOME": str(data), "PATH": "/nonexistent"}
    args = ["-m", "heuresis_env.cli", "mcp", "--family", "lg", "--d", str(D), "--n", str(N)]

    async def session() -> None:
        params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=work)
        async with Client(params) as client:
            await client.call_tool("describe_data", {})

    anyio.run(session)
    assert not any(work.iterdir())  # nothing in the working directory
    assert len(list((data / "heuresis" / "mcp" / "traces").glob("*.jsonl"))) == 1
    printed = subprocess.run([sys.executable, *args, "--guided", "--client-config"],
                             capture_output=True, text=True, timeout=120, env=env, cwd=work)
    config = json.loads(printed.stdout)["mcpServers"]["heuresis"]
    assert config == {"command": sys.executable,
                      "args": [*args[:3], "--family", "lg", "--guided", "--d", str(D),
                               "--n", str(N)]}
