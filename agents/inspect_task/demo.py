"""The keyless inspect run: Heuresis's task against the loopback chat server, through inspect's
``openai-api`` provider, and ``inspect view`` on its log (``heuresis inspect-demo``).

The server (:class:`~agents.llm.server.ChatServer`) plays
:class:`~agents.llm.heuristic_model.HeuristicModel` — a deterministic stand-in for a language
model — on ``127.0.0.1``; inspect reaches it as ``openai-api/loopback/heuresis-heuristic``,
exactly as it would reach a vLLM or Ollama server, so the run exercises the whole path: inspect's
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

from agents.llm import HEURISTIC_MODEL_NAME, ChatServer, HeuristicModel
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


#: how long ``inspect view`` may take to answer before the demo gives up on it
VIEW_READY_SECONDS = 300.0


def _answers(url: str) -> bool:
    """True when an HTTP server answers ``url`` (any status), never through a proxy."""
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        opener.open(url, timeout=2).close()
    except urllib.error.HTTPError:
        return True  # it answered, with an error status
    except OSError:
        return False
    return True


def _stop_on_signal(signum: int, frame: Any) -> None:  # noqa: ARG001 - signal handler
    raise SystemExit(128 + signum)


def view_logs(log_dir: str | os.PathLike, port: int = 7575, host: str = "127.0.0.1",
              ready_seconds: float = VIEW_READY_SECONDS) -> int:
    """``inspect view`` on ``log_dir`` until interrupted; its exit status.

    The URL is printed once the viewer answers it (its start-up takes tens of seconds on a
    loaded machine), and the viewer ends with this process: on Ctrl-C, SIGTERM or SIGHUP it
    is terminated (killed if it lingers), so it never keeps the port after the demo ends."""
    import signal
    import time

    command = [sys.executable, "-m", "inspect_ai", "view", "start", "--log-dir",
               str(Path(log_dir)), "--host", host, "--port", str(int(port))]
    url = f"http://{host}:{port}"
    handlers = {sig: signal.signal(sig, _stop_on_signal)
                for sig in (signal.SIGTERM, signal.SIGHUP)}
    child = subprocess.Popen(command)
    try:
        print(f"starting inspect view on port {port} …", flush=True)
        deadline = time.monotonic() + ready_seconds
        while not _answers(url):
            if child.poll() is not None:
                print(f"inspect view exited with status {child.returncode} before it answered "
                      f"on {url}", file=sys.stderr, flush=True)
                return child.returncode or 1
            if time.monotonic() > deadline:
                print(f"inspect view did not answer on {url} within {ready_seconds:.0f} s",
                      file=sys.stderr, flush=True)
                return 1
            time.sleep(0.5)
        print(f"inspect view: {url} (Ctrl-C stops it)", flush=True)
        return child.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
