"""``heuresis score``: the scores of episodes whose scores were withheld (an MCP session on a
sealed test split), computed from their trace files with the truth regenerated here."""

from __future__ import annotations

import argparse
from pathlib import Path

from heuresis_env.env.referee import open_instance
from heuresis_env.errors import HeuresisError
from heuresis_env.generation.instances import InstanceKey
from heuresis_env.generation.salts import TEST_SALT_ENV, sealing_salt
from heuresis_env.graphs import Graph, GraphError
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
    if not isinstance(trace.header.get("instance"), dict | None) or not isinstance(
            trace.end, dict | None):
        raise HeuresisError(f"{path}: its header's instance (or its end record) is not a JSON "
                            "object: not a trace heuresis wrote")
    recorded = dict(trace.header.get("instance") or {})
    sha256 = recorded.pop("sha256", None)
    if trace.end is None or trace.end.get("final_graph") is None:
        raise HeuresisError(f"{path}: the episode has no end record (it is still running, or "
                            "was cut short): nothing to score")
    try:
        key = InstanceKey.from_dict(recorded)
    except (TypeError, ValueError, KeyError) as exc:
        raise HeuresisError(f"{path}: its header's instance key is malformed ({exc}); not a "
                            "trace heuresis wrote") from None
    salt = sealing_salt(key.split)
    if trace.header.get("sealed") and salt is None:
        raise HeuresisError(f"{path} is a sealed test episode; set ${TEST_SALT_ENV} to its salt")
    public, referee = open_instance(key, salt)
    if public.sha256 != sha256:
        raise HeuresisError(f"{path}: the regenerated instance differs from the recorded one "
                            "(another salt or generator version)")
    try:
        final = Graph.from_dict(trace.end["final_graph"])
    except (GraphError, TypeError, ValueError, KeyError, AttributeError) as exc:
        raise HeuresisError(f"{path}: its final graph is malformed ({exc})") from None
    return {"termination_reason": trace.end.get("termination_reason"), **referee["scores"](final)}


def run(args: argparse.Namespace) -> int:
    for path in trace_files(args.paths):
        try:
            scores = score_trace(path)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a forged header
            raise HeuresisError(f"{path}: not a trace heuresis wrote ({type(exc).__name__}: "
                                f"{exc})") from None
        shown = ", ".join(f"{k} = {v:.3f}" if isinstance(v, float) else f"{k} = {v}"
                          for k, v in scores.items())
        print(f"{path}: {shown}")
    return 0
