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
  ``heuresis export-inspect``.

Needs the ``inspect`` extra (``pip install -e '.[inspect]'``). See ``docs/inspect.md``.
"""

from heuresis_env.errors import HeuresisError

try:
    import inspect_ai  # noqa: F401 - the optional dependency, checked once with a clear error
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise HeuresisError("Heuresis's inspect tasks and log conversions need inspect_ai: install "
                        "the inspect extra (pip install -e '.[inspect]')") from exc

from agents.inspect_task.backend import InspectChatBackend, inspect_messages, inspect_tools
from agents.inspect_task.scorer import heuresis_graph_scorer, heuresis_question_scorer
from agents.inspect_task.solver import heuresis_agent, policy_name
from agents.inspect_task.tasks import causal_discovery_task, episode_settings, question_task

__all__ = ["InspectChatBackend", "causal_discovery_task", "episode_settings", "heuresis_agent",
           "heuresis_graph_scorer", "heuresis_question_scorer", "inspect_messages",
           "inspect_tools", "policy_name", "question_task"]
