"""Gymnasium ids: ``Heuresis-{family}-v0`` for the six families of ``docs/families.md``, the eleven
BNLearn structures (``Heuresis-bnlearn-alarm-v0``, …), the Sachs data (``Heuresis-sachs-v0``)
and a user's table (``Heuresis-dataset-v0``, with ``data=..., names=..., graph=...``); and
``Heuresis-qa-{family}-v0`` for the six families' question episodes (``task="qa"``); and
``Heuresis-{family}-int-v0`` for the six families with an experiment budget of
:data:`~heuresis_env.budgets.DEFAULT_EXPERIMENT_ROWS` rows (``docs/experiments.md``).

Entry points are strings, so registering imports nothing heavy; the environment module loads
at ``gym.make``. ``heuresis_env/__init__.py`` calls :func:`register_envs` on import.
"""

from __future__ import annotations

import gymnasium as gym

from heuresis_env.budgets import DEFAULT_EXPERIMENT_ROWS

#: the families registered as ids (``docs/families.md``, in its order)
REGISTERED_FAMILIES = ("lg", "anm", "hetero", "wild", "mixed", "gauntlet")
#: the BNLearn structure families (``heuresis_env.generation.families.STRUCTURE_FAMILIES``;
#: spelled out here so that importing the package stays light — a test checks they agree)
REGISTERED_STRUCTURES = ("bnlearn-asia", "bnlearn-cancer", "bnlearn-earthquake",
                         "bnlearn-sachs", "bnlearn-child", "bnlearn-insurance", "bnlearn-alarm",
                         "bnlearn-hailfinder", "bnlearn-hepar2", "bnlearn-win95pts",
                         "bnlearn-andes")
#: the shipped real data sets registered as ids
REGISTERED_DATASETS = ("sachs",)
#: the id that takes a user's table
DATASET_ID = "Heuresis-dataset-v0"
ENTRY_POINT = "heuresis_env.env.core:HeuresisEnv"
#: episode tasks: recover the whole graph, or answer one question (``heuresis_env.questions``)
TASKS = ("graph", "qa")
VERSION = 0
#: the suffix of a family played with an experiment budget (``wild-int``, ``Heuresis-wild-int-v0``)
INTERVENTIONAL_SUFFIX = "-int"


def interventional_family(name: str) -> tuple[str, bool]:
    """``("wild", True)`` for ``"wild-int"``, ``(name, False)`` for any other name."""
    if name.endswith(INTERVENTIONAL_SUFFIX) and len(name) > len(INTERVENTIONAL_SUFFIX):
        return name[: -len(INTERVENTIONAL_SUFFIX)], True
    return name, False


def env_id(family: str, task: str = "graph", experiments: bool = False) -> str:
    """The Gymnasium id of a family, e.g. ``Heuresis-wild-v0`` (``Heuresis-qa-wild-v0`` for
    its question episodes, ``Heuresis-wild-int-v0`` with an experiment budget)."""
    prefix = "" if task == "graph" else f"{task}-"
    suffix = INTERVENTIONAL_SUFFIX if experiments else ""
    return f"Heuresis-{prefix}{family}{suffix}-v{VERSION}"


def register_envs() -> list[str]:
    """Register every id (idempotent): graph episodes of the families, structures and data
    sets, the user's-table id, then the six families' question episodes, then the six
    families with an experiment budget; returns the ids."""
    ids = []
    graph_families = (*REGISTERED_FAMILIES, *REGISTERED_STRUCTURES, *REGISTERED_DATASETS)
    for task in TASKS:
        for family in (graph_families if task == "graph" else REGISTERED_FAMILIES):
            name = env_id(family, task)
            if name not in gym.registry:
                kwargs = {"family": family} if task == "graph" else {"family": family,
                                                                      "task": task}
                gym.register(id=name, entry_point=ENTRY_POINT, kwargs=kwargs,
                             nondeterministic=False, disable_env_checker=False)
            ids.append(name)
        if task == "graph":
            if DATASET_ID not in gym.registry:
                # family=None: the table comes with gym.make(..., data=, names=, graph=)
                gym.register(id=DATASET_ID, entry_point=ENTRY_POINT, kwargs={"family": None},
                             nondeterministic=False, disable_env_checker=False)
            ids.append(DATASET_ID)
    for family in REGISTERED_FAMILIES:
        name = env_id(family, experiments=True)
        if name not in gym.registry:
            gym.register(id=name, entry_point=ENTRY_POINT,
                         kwargs={"family": family, "experiments": DEFAULT_EXPERIMENT_ROWS},
                         nondeterministic=False, disable_env_checker=False)
        ids.append(name)
    return ids
