"""Gymnasium ids: ``Heuresis-{family}-v0`` for the six families of ``docs/families.md``.

Entry points are strings, so registering imports nothing heavy; the environment module loads
at ``gym.make``. ``heuresis_env/__init__.py`` calls :func:`register_envs` on import.
"""

from __future__ import annotations

import gymnasium as gym

#: the families registered as ids (``docs/families.md``, in its order)
REGISTERED_FAMILIES = ("lg", "anm", "hetero", "wild", "mixed", "gauntlet")
ENTRY_POINT = "heuresis_env.env.core:HeuresisEnv"
VERSION = 0


def env_id(family: str) -> str:
    """The Gymnasium id of a family, e.g. ``Heuresis-wild-v0``."""
    return f"Heuresis-{family}-v{VERSION}"


def register_envs() -> list[str]:
    """Register every family's id (idempotent); returns the ids."""
    ids = []
    for family in REGISTERED_FAMILIES:
        name = env_id(family)
        if name not in gym.registry:
            gym.register(id=name, entry_point=ENTRY_POINT, kwargs={"family": family},
                         nondeterministic=False, disable_env_checker=False)
        ids.append(name)
    return ids
