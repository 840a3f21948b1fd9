"""The task functions inspect finds through the ``inspect_ai`` entry point: their arguments
are the ``-T`` options of ``inspect eval heuresis/causal_discovery`` and
``inspect eval heuresis/qa`` (see ``docs/inspect.md``).

inspect prefixes a task's name with its package when it recognizes the package as installed —
by the distribution metadata it finds first on ``sys.path``. From the repository's root, with
the working folder on ``sys.path`` (``python -m``, pytest), that is the build's
``heuresis.egg-info``, which does not say the install is editable, and the prefix would be
lost; :func:`_registered` names the tasks ``heuresis/…`` either way.
"""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai import Task, task
from inspect_ai._util.package import get_installed_package_name

from agents.inspect_task import causal_discovery_task, episode_settings, question_task
from agents.qa import MAX_ITERATIONS
from heuresis_env.budgets import (
    DEFAULT_MAX_SECONDS,
    DEFAULT_MAX_STEPS,
    DEFAULT_TOKEN_BUDGET_PER_TURN,
)

__all__ = ["NAMESPACE", "causal_discovery", "qa"]

#: the namespace of Heuresis's tasks (the package's name)
NAMESPACE = "heuresis"


def _registered(function: Callable[..., Task]) -> Callable[..., Task]:
    """``@task`` under the name ``heuresis/<function name>``, whether or not inspect recognizes
    the package (see the module docstring)."""
    name = function.__name__
    if get_installed_package_name(function) != NAMESPACE:
        name = f"{NAMESPACE}/{name}"
    return task(name=name)(function)


@_registered
def causal_discovery(family: str = "all", split: str = "dev", count: int | None = None,
                     max_steps: int = DEFAULT_MAX_STEPS, max_seconds: float = DEFAULT_MAX_SECONDS,
                     token_budget: int = DEFAULT_TOKEN_BUDGET_PER_TURN, prompt_level: int = 1,
                     target: str = "none", guided: bool = False, toolbox: str = "full",
                     d: int | None = None, n: int | None = None, bca: bool = True,
                     native_tools: bool = True, epochs: int = 1, experiments: int = 0) -> Task:
    """Recover the causal graph behind an anonymous data table, one sample per instance of
    ``family`` (comma-separated, or ``all``) on ``split``; scored by adjacency F1, SHD and the
    residual gain over BCA_φ (``agents.inspect_task.causal_discovery_task``). ``experiments``
    is an experiment budget in rows (the ``intervene`` tool; docs/experiments.md)."""
    settings = episode_settings(max_steps, max_seconds, token_budget, prompt_level, target,
                                guided, toolbox, experiments)
    return causal_discovery_task(family, split, count, settings, d=d, n=n, bca=bca,
                                 native_tools=native_tools, epochs=epochs)


@_registered
def qa(family: str = "all", split: str = "dev", count: int | None = None,
       name_mode: str = "anonymous", max_steps: int = DEFAULT_MAX_STEPS,
       max_seconds: float = DEFAULT_MAX_SECONDS,
       token_budget: int = DEFAULT_TOKEN_BUDGET_PER_TURN, prompt_level: int = 1,
       toolbox: str = "full", d: int | None = None, n: int | None = None,
       native_tools: bool = True, max_iterations: int = MAX_ITERATIONS,
       epochs: int = 1) -> Task:
    """Answer one causal question per sample about a data table of ``family`` on ``split``,
    scored exactly against the hidden model (``agents.inspect_task.question_task``)."""
    settings = episode_settings(max_steps, max_seconds, token_budget, prompt_level,
                                toolbox=toolbox)
    return question_task(family, split, count, settings, name_mode=name_mode, d=d, n=n,
                         native_tools=native_tools, max_iterations=max_iterations,
                         epochs=epochs)
