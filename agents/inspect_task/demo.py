"""The keyless inspect run: Heuresis's task against the loopback chat server, through inspect's
``openai-api`` provider, and ``inspect view`` on its log (``heuresis inspect-demo``).

The server (:class:`~agents.llm.server.ChatServer`) plays
:class:`~agents.llm.server.HeuristicModel` — a deterministic stand-in for a language model —
on ``127.0.0.1``; inspect reaches it as ``openai-api/loopback/heuresis-heuristic``, exactly as
it would reach a vLLM or Ollama server, so the run exercises the whole path: inspect's
provider and HTTP client, the policy, the environment and the referee.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model

from agents.llm.server import HEURISTIC_MODEL_NAME, ChatServer, HeuristicModel
from heuresis_env.errors import HeuresisError

__all__ = ["LOOPBACK_MODEL", "TASK", "loopback_eval", "view_logs"]

#: the registered task (the ``inspect_ai`` entry point of the ``heuresis`` package)
TASK = "heuresis/causal_discovery"
#: the inspect model name of the loopback server (service ``loopback`` of ``openai-api``)
LOOPBACK_MODEL = f"openai-api/loopback/{HEURISTIC_MODEL_NAME}"


def loopback_eval(log_dir: str | os.PathLike, family: str = "wild", split: str = "dev",
                  count: int = 2, display: str = "plain", **task_options: Any) -> EvalLog:
    """``inspect eval heuresis/causal_discovery`` on the first ``count`` instances against a
    loopback server playing the heuristic model; returns the eval's log (written in
    ``log_dir``)."""
    with ChatServer(responder=HeuristicModel(), model=HEURISTIC_MODEL_NAME) as server:
        model = get_model(LOOPBACK_MODEL, base_url=server.url, api_key="local")
        logs = inspect_eval(TASK, task_args={"family": family, "split": split, "count": count,
                                             **task_options},
                            model=model, log_dir=str(log_dir), display=display)  # type: ignore[arg-type]
    log = logs[0]
    if log.status != "success":
        message = log.error.message if log.error is not None else log.status
        raise HeuresisError(f"the inspect eval did not succeed: {message}")
    return log


def view_logs(log_dir: str | os.PathLike, port: int = 7575, host: str = "127.0.0.1") -> int:
    """``inspect view`` on ``log_dir`` (runs until interrupted); its exit status."""
    command = [sys.executable, "-m", "inspect_ai", "view", "start", "--log-dir",
               str(Path(log_dir)), "--host", host, "--port", str(int(port))]
    print(f"inspect view: http://{host}:{port} (Ctrl-C stops it)", flush=True)
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 0
