"""Episode traces: records, evidence links, graph diffs, and replay."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

from heuresis_env.cli import replay as replay_cli
from heuresis_env.env import EvidenceLinker, read_trace, replay_trace
from heuresis_env.env.traces import TRACE_OUTPUT_CHARS, bounded_output, text_digest
from heuresis_env.errors import HeuresisError, TraceFormatError
from heuresis_env.registration import env_id, register_envs

register_envs()
SMALL = {"d": 5, "n": 200, "indices": [0]}

SCRIPT = [
    {"tool": "describe_data"},                                                     # 1
    {"tool": "ci_test", "args": {"x": "X1", "y": "X2", "method": "kci"}},          # 2
    {"tool": "add_edge", "args": {"x": "X1", "y": "X2"}},                          # 3 implicit [1, 2]
    {"tool": "ci_test", "args": {"x": "X2", "y": "X3"}},                           # 4
    {"tool": "orientation_probe", "args": {"x": "X2", "y": "X3"}},                  # 5
    {"tool": "add_edge", "args": {"x": "X2", "y": "X3", "evidence": [4]}},         # 6 explicit [4]
    "this is not an action",                                                       # 7 error
    {"tool": "stability", "args": {"n_boot": 3}},                                  # 8
    {"tool": "reverse_edge", "args": {"x": "X1", "y": "X2"}},                      # 9 implicit [4, 5, 8]
    {"tool": "set_graph", "args": {"edges": ["X2 --> X1", "X4 --- X5"]}},         # 10
    {"tool": "submit"},                                                            # 11
]


def run_episode(tmp_path: Path, script=SCRIPT, **kwargs) -> tuple[Path, dict]:
    env = gym.make(env_id("wild"), trace_path=str(tmp_path), **{**SMALL, **kwargs})
    env.reset(seed=5)
    info = {}
    for action in script:
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    path = env.unwrapped.trace_file
    env.close()
    return path, info


def test_evidence_linker_rules():
    linker = EvidenceLinker()
    linker.record_call(1)
    linker.record_call(2)
    assert linker.link_edit(3, [frozenset((0, 1))], None) == ([1, 2], "implicit")
    linker.record_call(4)
    assert linker.link_edit(5, [frozenset((0, 1))], None) == ([4], "implicit")
    assert linker.link_edit(6, [frozenset((1, 2))], None) == ([1, 2, 4], "implicit")
    assert linker.link_edit(7, [frozenset((1, 2))], [2, 1, 2]) == ([1, 2], "explicit")
    # a multi-pair edit takes the calls since the oldest of its pairs' last edits
    assert linker.link_edit(8, [frozenset((0, 1)), frozenset((3, 4))], None) == (
        [1, 2, 4], "implicit")


def test_trace_records_every_step_with_evidence_and_diffs(tmp_path):
    path, info = run_episode(tmp_path)
    trace = read_trace(path)
    assert trace.header["config"]["family"] == "wild"
    assert trace.header["instance"]["index"] == 0 and len(trace.header["instance"]["sha256"]) == 64
    assert [r["step"] for r in trace.steps] == list(range(1, len(SCRIPT) + 1))
    by_step = {r["step"]: r for r in trace.steps}
    assert by_step[3]["evidence"] == [1, 2] and by_step[3]["evidence_source"] == "implicit"
    assert by_step[3]["graph_diff"] == [{"pair": ["X1", "X2"], "before": None,
                                         "after": "X1 --> X2"}]
    assert by_step[6]["evidence"] == [4] and by_step[6]["evidence_source"] == "explicit"
    assert by_step[7]["error"] and by_step[7]["tool"] is None and by_step[7]["graph_diff"] == []
    assert by_step[9]["evidence"] == [4, 5, 8]
    assert by_step[9]["graph_diff"][0]["after"] == "X2 --> X1"
    assert {tuple(d["pair"]) for d in by_step[10]["graph_diff"]} == {("X2", "X3"), ("X4", "X5")}
    assert by_step[2]["args"] == {"x": "X1", "y": "X2", "given": [], "method": "kci"}
    assert "evidence" not in by_step[2]
    for record in trace.steps:
        assert len(record["output_sha256"]) == 64
        # the output text is kept beside its digest (whole here: every output is short)
        assert record["output_sha256"] == text_digest(record["output"]) and record["output"]
        assert record["budget_used"]["steps"] == record["step"]
    assert trace.end["termination_reason"] == "submitted"
    assert trace.end["scores"]["f1"] == pytest.approx(info["scores"]["f1"])
    for line in path.read_text().splitlines():
        json.loads(line)  # strict JSON, one record a line


def test_outputs_hold_the_evidence_and_long_ones_are_bounded(tmp_path):
    path, _ = run_episode(tmp_path)
    by_step = {r["step"]: r for r in read_trace(path).steps}
    assert "p-value" in by_step[2]["output"] and "X1" in by_step[2]["output"]
    assert by_step[7]["output"].startswith("Error:")
    long = "y" * (TRACE_OUTPUT_CHARS + 123)
    kept = bounded_output(long)
    assert kept.startswith("y" * TRACE_OUTPUT_CHARS)
    assert kept.endswith("[… 123 more characters not kept in the trace]")
    assert bounded_output("short") == "short"


def test_replay_reproduces_graph_and_scores(tmp_path):
    path, info = run_episode(tmp_path)
    report = replay_trace(path)
    assert report.ok, report.summary()
    assert report.output_mismatches == []
    assert report.replayed_scores == info["scores"]
    assert report.replayed_termination == "submitted"


def test_replay_of_a_truncated_guided_episode(tmp_path):
    script = [{"tool": "deletion_log"}, {"tool": "remove_edge", "args": {"x": "X1", "y": "X2"}},
              {"tool": "describe_data"}, {"tool": "describe_data"}]
    path, info = run_episode(tmp_path, script, guided=True, max_steps=3, target="cpdag")
    assert info["termination_reason"] == "step_budget"
    report = replay_trace(path)
    assert report.ok, report.summary()
    assert report.replayed_termination == "step_budget"
    trace = read_trace(path)
    assert len(trace.steps) == 3 and trace.end["steps_used"] == 3
    assert trace.header["starting_graph"] != trace.end["final_graph"]  # the edit is recorded


def test_replay_detects_a_tampered_trace(tmp_path):
    path, _ = run_episode(tmp_path)
    lines = path.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for record in records:
        if record.get("step") == 10:
            record["action"]["args"]["edges"] = ["X2 --> X1"]
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    report = replay_trace(tampered)
    assert not report.ok and not report.same_graph
    assert 10 in report.output_mismatches


def test_trace_errors_are_clear(tmp_path):
    with pytest.raises(TraceFormatError, match="no trace file"):
        read_trace(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "step", "step": 1}\n')
    with pytest.raises(TraceFormatError, match="no header"):
        read_trace(bad)
    path, _ = run_episode(tmp_path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records[0]["sealed"] = True
    sealed = tmp_path / "sealed.jsonl"
    sealed.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    with pytest.raises(HeuresisError, match="salt"):
        replay_trace(sealed)


def test_replay_command(tmp_path, capsys):
    path, _ = run_episode(tmp_path)
    parser = __import__("argparse").ArgumentParser()
    replay_cli.add_arguments(parser)
    assert replay_cli.run(parser.parse_args([str(path)])) == 0
    assert "OK" in capsys.readouterr().out


def test_an_unfinished_episode_is_closed_and_replays_its_graph(tmp_path):
    env = gym.make(env_id("lg"), trace_path=str(tmp_path), **SMALL)
    env.reset(seed=0)
    env.step({"tool": "add_edge", "args": {"x": "X1", "y": "X2"}})
    first = env.unwrapped.trace_file
    env.reset(seed=0)  # abandons the first episode
    env.close()
    trace = read_trace(first)
    assert trace.end["termination_reason"] == "unfinished"
    report = replay_trace(first)
    assert report.ok and report.same_graph, report.summary()
    assert any("unfinished" in note for note in report.notes)
