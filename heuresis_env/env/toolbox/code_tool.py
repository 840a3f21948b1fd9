"""The code tool: agent-written Python over the data, run by the sandbox in its own process.

The sandbox (``heuresis_env.env.sandbox``) enforces the guarantees of ``docs/sandbox.md``: no network, no file
outside its scratch folder, bounded CPU time, memory and output. A crash or a time-out of
the agent's code is an ordinary result (its text says what happened), never an error of the
environment. When the sandbox module is not installed the tool says so instead of running
anything.
"""

from __future__ import annotations

from pydantic import Field

from heuresis_env.env.sandbox import Sandbox
from heuresis_env.env.toolbox.registry import Tool, ToolArgs, ToolResult, register_tool
from heuresis_env.env.toolbox.state import EpisodeState

MAX_CODE_CHARS = 12_000


class RunCodeArgs(ToolArgs):
    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS, description=(
        "Python source; the data is the NumPy array X (n x d) with column names in names; "
        "numpy, scipy and scikit-learn are importable; print what you want to see"))


def _open_sandbox(state: EpisodeState):
    """The episode's sandbox over the data; with experiments, over every row so far, with
    ``regimes`` (each row's regime: 0 observational, k the k-th experiment) and
    ``experiments`` (regime k's target and value at position k − 1)."""
    regimes = state.regimes
    if regimes is None:
        return Sandbox(state.data, state.names)
    rows, labels = regimes.pooled()
    return Sandbox(rows, state.names, regimes=labels,
                   experiments=[r.to_dict() for r in regimes.regimes[1:]])


def _run_code(state: EpisodeState, args: RunCodeArgs) -> ToolResult:
    regimes = state.regimes
    if regimes is not None and state.sandbox is not None \
            and regimes.memo.get(("sandbox",)) != regimes.n_experiments:
        close_sandbox(state)  # an experiment since: the next sandbox holds its rows too
    if state.sandbox is None:
        try:
            state.sandbox = _open_sandbox(state)
            if regimes is not None:
                regimes.memo[("sandbox",)] = regimes.n_experiments
        except ImportError as exc:
            return ToolResult.failure(
                "run_code is unavailable: the sandbox module (heuresis_env.env.sandbox) is not "
                f"part of this installation ({exc}); use the other tools")
    result = state.sandbox.run(args.code)
    return ToolResult(text=result.to_text(), data={"status": str(result.status)})


def close_sandbox(state: EpisodeState) -> None:
    """Release the episode's sandbox (its process and scratch folder), if one was opened."""
    sandbox, state.sandbox = state.sandbox, None
    close = getattr(sandbox, "close", None)
    if callable(close):
        close()


register_tool(Tool(
    name="run_code",
    description="Run Python code over the data in a sandbox (no network, no files, bounded "
                "time and memory) and show what it prints. X is the n x d data array and "
                "names the column names.",
    args_model=RunCodeArgs, run=_run_code, category="code", minimal=False))
