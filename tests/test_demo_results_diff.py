"""scripts/demo_results_diff.py: two demo folders compare equal when only time and place
differ, and a changed score, graph or missing episode is a difference (issue 43's check that
the main job's results do not change)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("demo_results_diff",
                                               ROOT / "scripts" / "demo_results_diff.py")
assert _spec is not None and _spec.loader is not None
diff = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(diff)


def _write(folder: Path, records: list[dict]) -> Path:
    run = folder / "runs" / "pc-kci"
    run.mkdir(parents=True)
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


RECORD = {"episode_id": "lg/test/0/r0", "scores": {"f1": 0.5, "shd": 3}, "steps": 2,
          "final_graph": {"names": ["X1", "X2"], "marks": [[0, 2], [1, 0]]},
          "wall_seconds": 0.1, "worker": "local:a:1", "config_digest": "aa"}


def test_time_and_place_are_left_out_and_order_does_not_matter(tmp_path):
    other = {**RECORD, "episode_id": "lg/test/1/r0"}
    before = _write(tmp_path / "a", [RECORD, other])
    moved = {**RECORD, "wall_seconds": 9.0, "worker": "local:b:2", "config_digest": "bb"}
    after = _write(tmp_path / "b", [other, moved])
    assert diff.compare(before, after) == []


def test_a_changed_result_or_a_missing_episode_is_a_difference(tmp_path):
    before = _write(tmp_path / "a", [RECORD])
    changed = {**RECORD, "scores": {"f1": 0.6, "shd": 3}}
    assert "scores" in diff.compare(before, _write(tmp_path / "b", [changed]))[0]
    graph = {**RECORD, "final_graph": {"names": ["X1", "X2"], "marks": [[0, 1], [2, 0]]}}
    assert "final_graph" in diff.compare(before, _write(tmp_path / "c", [graph]))[0]
    assert "episodes differ" in diff.compare(before, _write(tmp_path / "d", []))[0]
