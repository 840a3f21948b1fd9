"""Issue 46, routes 11 and 12 (sealing a user can get wrong): bad input is a clear one-line
error and loses nothing; a session says whether it is sealed. On main each of these was a
traceback, a hang, a silently accepted value or a silent public split."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import evaluate
from heuresis_env.evaluation.episode import usage_fields
from heuresis_env.generation.salts import TEST_SALT_ENV

ROOT = Path(__file__).resolve().parents[2]


def heuresis(*arguments: str, cwd: Path = ROOT, **environment: str
             ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != TEST_SALT_ENV}
    return subprocess.run([sys.executable, "-m", "heuresis_env.cli", *arguments], cwd=cwd,
                          env={**env, **environment}, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def one_line_error(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert all(word in done.stderr for word in words), done.stderr[-2000:]


def test_a_table_that_is_not_csv_is_a_one_line_error(tmp_path):
    table = tmp_path / "binary.csv"
    table.write_text("a,b\n1," + "9" * 200_000 + "\n")  # the csv module's field limit
    one_line_error(heuresis("evaluate", "--policy", "pc-fisherz", "--dataset", str(table),
                            "--out", str(tmp_path / "run")), "not a CSV table")


def test_a_deeply_nested_config_or_a_link_loop_is_a_one_line_error(tmp_path):
    run = tmp_path / "deep"
    run.mkdir()
    (run / "config.json").write_text('{"format_version": 2, "x": ' + '{"a": ' * 100_000
                                     + "{}" + "}" * 100_001)
    (run / "results.jsonl").write_text("")
    one_line_error(heuresis("report", str(run), "--out", str(tmp_path / "r")), "too deeply")
    one_line_error(heuresis("view", str(run), "--out", str(tmp_path / "v")), "too deeply")
    loop = tmp_path / "loop"
    (tmp_path / "other").symlink_to(loop)
    loop.symlink_to(tmp_path / "other")
    one_line_error(heuresis("report", str(loop), "--out", str(tmp_path / "r2")),
                   str(loop))


@pytest.mark.parametrize("instance", ["a string", {"family": ["lg"], "split": "dev",
                                                   "index": "zero"}])
def test_a_trace_header_of_wrong_types_is_a_one_line_error(tmp_path, instance):
    trace = tmp_path / "forged.jsonl"
    trace.write_text("\n".join(json.dumps(r) for r in (
        {"type": "header", "trace_version": 1, "instance": instance},
        {"type": "end", "final_graph": {"names": ["X1"], "marks": [[0]]}})) + "\n")
    one_line_error(heuresis("score", str(trace)), str(trace))


def test_repeats_and_self_reported_usage_are_bounded(tmp_path):
    with pytest.raises(HeuresisError, match="repeats must be an integer in 1..1000"):
        evaluate("pc-fisherz", repeats=10**9, progress=False, out_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before any work
    assert usage_fields({"prompt_tokens": 10**308, "completion_tokens": "9" * 309,
                         "cost_usd": 1e300})["tokens"] is None
    assert usage_fields({"cost_usd": 1e300})["cost_usd"] is None
    assert usage_fields({"prompt_tokens": 1200, "cost_usd": 0.02}) == {
        "tokens": {"prompt": 1200, "completion": 0}, "cost_usd": 0.02, "api_retries": None}


def test_a_guessable_mcp_token_is_refused():
    pytest.importorskip("mcp")
    from heuresis_env.mcp.server import check_token, new_token

    for weak in ("a" * 16, "a" * 64, "0123456789abcdef" * 4, "hunter2"):
        with pytest.raises(HeuresisError, match="guessable"):
            check_token(weak)
    assert check_token(new_token())
    done = heuresis("mcp", "--family", "lg", "--d", "4", "--n", "100", "--transport", "http",
                    "--port", "8799", HEURESIS_MCP_TOKEN="x" * 16)
    one_line_error(done, "guessable")


def test_an_mcp_session_says_sealed_or_public_and_sealed_insists_on_the_salt(tmp_path,
                                                                              monkeypatch):
    pytest.importorskip("mcp")
    from heuresis_env.generation.salts import new_salt
    from heuresis_env.mcp.server import EpisodeServer

    monkeypatch.delenv(TEST_SALT_ENV, raising=False)
    public = EpisodeServer(family="lg", split="test", d=4, n=100, trace_dir=tmp_path / "a")
    assert "PUBLIC" in public.last_reply.text.splitlines()[0]
    sealed = EpisodeServer(family="lg", split="test", d=4, n=100, trace_dir=tmp_path / "b",
                           salt=new_salt())
    assert "SEALED" in sealed.last_reply.text.splitlines()[0]
    one_line_error(heuresis("mcp", "--split", "test", "--sealed", "--d", "4", "--n", "100"),
                   "--sealed", TEST_SALT_ENV)
