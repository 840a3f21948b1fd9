"""``heuresis score``: the scores of episodes whose scores were withheld (an MCP session on a
sealed test split), computed from their trace files with the truth regenerated here."""

from __future__ import annotations

import argparse
from pathlib import Path

from heuresis_env.env.referee import open_instance
from heuresis_env.errors import HeuresisError
from heuresis_env.generation.instances import InstanceKey
from heuresis_env.generation.salts import TEST_SALT_ENV, sealing_salt
from heuresis_env.graphs import Graph
from heuresis_env.trace_files import read_trace

HELP = ("score the episodes of trace files or folders (e.g. an MCP session on a sealed test "
        "split, which returns no scores) against the regenerated truth")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path,
                        help="trace files (*.jsonl) or folders holding them")


def trace_files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(path.rglob("*.jsonl"))
        elif path.is_file():
            found.append(path)
        else:
            raise HeuresisError(f"{path}: no such file or folder")
    if not found:
        raise HeuresisError(f"no trace files (*.jsonl) in {', '.join(map(str, paths))}")
    return found


def score_trace(path: Path) -> dict:
    """The trace's final graph scored on its instance's truth (the salt from
    ``$HEURESIS_TEST_SALT`` for a sealed instance); the regenerated instance must match the
    recorded hash."""
    trace = read_trace(path)
    recorded = dict(trace.header.get("instance") or {})
    sha256 = recorded.pop("sha256", None)
    if trace.end is None or trace.end.get("final_graph") is None:
        raise HeuresisError(f"{path}: the episode has no end record (it is still running, or "
                            "was cut short): nothing to score")
    key = InstanceKey.from_dict(recorded)
    salt = sealing_salt(key.split)
    if trace.header.get("sealed") and salt is None:
        raise HeuresisError(f"{path} is a sealed test episode; set ${TEST_SALT_ENV} to its salt")
    public, referee = open_instance(key, salt)
    if public.sha256 != sha256:
        raise HeuresisError(f"{path}: the regenerated instance differs from the recorded one "
                            "(another salt or generator version)")
    return {"termination_reason": trace.end.get("termination_reason"),
            **referee["scores"](Graph.from_dict(trace.end["final_graph"]))}


def run(args: argparse.Namespace) -> int:
    for path in trace_files(args.paths):
        scores = score_trace(path)
        shown = ", ".join(f"{k} = {v:.3f}" if isinstance(v, float) else f"{k} = {v}"
                          for k, v in scores.items())
        print(f"{path}: {shown}")
    return 0
