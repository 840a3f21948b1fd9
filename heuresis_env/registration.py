"""Gymnasium ids: ``Heuresis-{family}-v0`` for the six families of ``docs/families.md``, and
``Heuresis-qa-{family}-v0`` for their question episodes (``task="qa"``).

Entry points are strings, so registering imports nothing heavy; the environment module loads
at ``gym.make``. ``heuresis_env/__init__.py`` calls :func:`register_envs` on import.
"""

from __future__ import annotations

import gymnasium as gym

#: the families registered as ids (``docs/families.md``, in its order)
REGISTERED_FAMILIES = ("lg", "anm", "hetero", "wild", "mixed", "gauntlet")
ENTRY_POINT = "heuresis_env.env.core:HeuresisEnv"
#: episode tasks: recover the whole graph, or answer one question (``heuresis_env.questions``)
TASKS = ("graph", "qa")
VERSION = 0


def env_id(family: str, task: str = "graph") -> str:
    """The Gymnasium id of a family, e.g. ``Heuresis-wild-v0`` (``Heuresis-qa-wild-v0`` for
    its question episodes)."""
    prefix = "" if task == "graph" else f"{task}-"
    return f"Heuresis-{prefix}{family}-v{VERSION}"


def register_envs() -> list[str]:
    """Register every family's ids, graph episodes then question episodes (idempotent);
    returns the ids."""
    ids = []
    for task in TASKS:
        for family in REGISTERED_FAMILIES:
            name = env_id(family, task)
            if name not in gym.registry:
                kwargs = {"family": family} if task == "graph" else {"family": family,
                                                                      "task": task}
                gym.register(id=name, entry_point=ENTRY_POINT, kwargs=kwargs,
                             nondeterministic=False, disable_env_checker=False)
            ids.append(name)
    return ids
