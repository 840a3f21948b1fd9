"""Heuresis as an inspect_ai task: the toolbox behind any inspect model provider, the
referee's scores, and inspect logs converted to and from run directories.

- :mod:`~agents.inspect_task.backend` — the language-model policy's chat backend over an
  inspect model (the registry's tool schemas as inspect tools);
- :mod:`~agents.inspect_task.solver` — one episode per sample, run as the evaluation runner
  runs it, in a worker thread;
- :mod:`~agents.inspect_task.scorer` — the referee's scores and the residual gain over BCA_φ;
- :mod:`~agents.inspect_task.tasks` — the graph task and the question task (registered as
  ``heuresis/causal_discovery`` and ``heuresis/qa`` by the :mod:`heuresis` package);
- :mod:`~agents.inspect_task.logs` — ``heuresis import-inspect`` and
  ``heuresis export-inspect``; :mod:`~agents.inspect_task.demo` — ``heuresis inspect-demo``.

Needs the ``inspect`` extra (``pip install -e '.[inspect]'``). The names below load on first
use (:mod:`agents.faces`), so the commands' modules (``cli_*``), which ``heuresis --help``
imports, do not import inspect_ai. See ``docs/inspect.md``.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from agents.faces import lazy_face
from heuresis_env.errors import HeuresisError

if TYPE_CHECKING:  # what type checkers see; at run time each name loads on first use
    from agents.inspect_task.backend import InspectChatBackend, inspect_messages, inspect_tools
    from agents.inspect_task.scorer import heuresis_graph_scorer, heuresis_question_scorer
    from agents.inspect_task.solver import heuresis_agent, policy_name
    from agents.inspect_task.tasks import causal_discovery_task, episode_settings, question_task

#: public name → the module of this package that defines it
_EXPORTS = {
    "InspectChatBackend": "backend", "inspect_messages": "backend", "inspect_tools": "backend",
    "heuresis_graph_scorer": "scorer", "heuresis_question_scorer": "scorer",
    "heuresis_agent": "solver", "policy_name": "solver",
    "causal_discovery_task": "tasks", "episode_settings": "tasks", "question_task": "tasks",
}

__all__ = [
    "InspectChatBackend", "causal_discovery_task", "episode_settings", "heuresis_agent",
    "heuresis_graph_scorer", "heuresis_question_scorer", "inspect_messages", "inspect_tools",
    "policy_name", "question_task", "require_inspect",
]


def require_inspect() -> None:
    """Raise a clear error when inspect_ai is not installed (the ``inspect`` extra)."""
    if importlib.util.find_spec("inspect_ai") is None:
        raise HeuresisError("Heuresis's inspect tasks and log conversions need inspect_ai: "
                            "install the inspect extra (pip install -e '.[inspect]')")


__getattr__, __dir__ = lazy_face(__name__, _EXPORTS, check=require_inspect)
