"""The environment's keyword arguments checked before anything is built: unknown names, the
choices and how they combine (a question episode, the RL view), integer bounds, the instance
indices, a table given as ``data``, and the options of ``reset``. Each refusal names what
works."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from heuresis_env.env.toolbox.registry import TOOLBOXES, check_configuration
from heuresis_env.env.toolbox.state import TARGETS
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation.datasets import dataset_instance, register_instance
from heuresis_env.generation.families import available_families
from heuresis_env.generation.instances import Instance, available_sources, get_source, split_size
from heuresis_env.questions import NAME_MODES
from heuresis_env.registration import TASKS

INTERFACES = ("text", "rl")
REWARDS = ("f1", "shaped")
SPLITS = ("dev", "test")


def check_unknown_arguments(unknown: Sequence[str], known: Sequence[str]) -> None:
    """Refuse keyword arguments the environment does not take, naming those it does (a
    HeuresisError, not a TypeError: gym.make would print every keyword argument)."""
    if unknown:
        raise HeuresisError(
            f"unknown argument(s) {sorted(unknown)} for a Heuresis environment; known: "
            f"{', '.join(known)}" + (
                ". The step budget is max_steps" if "max_episode_steps" in unknown else ""))


def check_choices(family: str, split: str, target: str, toolbox: str, reward: str,
                  interface: str, render_mode: str | None, render_modes: Sequence[str],
                  guided: bool, task: str, name_mode: str,
                  questions: Sequence[int] | None) -> None:
    """Refuse an unknown family, split, target, toolbox, reward, view or render mode, and a
    combination the toolbox or the question mode does not support."""
    if family not in available_families() and get_source(family) is None:
        raise UnknownNameError("family or data set", family,
                               [*available_families(), *available_sources()])
    if split not in SPLITS:
        raise UnknownNameError("split", split, SPLITS)
    if target not in TARGETS:
        raise UnknownNameError("target", target, TARGETS)
    if toolbox not in TOOLBOXES:
        raise UnknownNameError("toolbox", toolbox, TOOLBOXES)
    if reward not in REWARDS:
        raise UnknownNameError("reward", reward, REWARDS)
    if interface not in INTERFACES:
        raise UnknownNameError("interface", interface, INTERFACES)
    if render_mode is not None and render_mode not in render_modes:
        raise UnknownNameError("render mode", render_mode, render_modes)
    check_configuration(toolbox, guided, task)
    _check_task(task, name_mode, interface, reward, toolbox, bool(guided), questions)


def _check_task(task: str, name_mode: str, interface: str, reward: str, toolbox: str,
                guided: bool, questions: Sequence[int] | None) -> None:
    """Refuse combinations the question mode does not support, saying what works."""
    if task not in TASKS:
        raise UnknownNameError("task", task, TASKS)
    if name_mode not in NAME_MODES:
        raise UnknownNameError("name mode", name_mode, NAME_MODES)
    if task == "graph":
        if name_mode != "anonymous" or questions is not None:
            raise HeuresisError("name_mode and questions belong to question episodes; pass "
                                "task='qa' (graph episodes use the anonymous names X1..Xd)")
        if interface == "rl" and toolbox == "code":
            raise HeuresisError("the RL view needs the full or minimal toolbox (its actions "
                                "are edits and tests), not toolbox='code'")
        return
    if interface != "text":
        raise HeuresisError("question episodes (task='qa') have the text view only; pass "
                            "interface='text'")
    if reward != "f1":
        raise HeuresisError("question episodes pay their score at the end (reward='f1': 1 for "
                            "a correct answer); reward='shaped' is for graph episodes")
    if guided and name_mode == "decoy":
        raise HeuresisError("decoy names and the guided start do not combine (the start "
                            "graph is cached under the anonymous names); pass guided=False")


#: what ``env.spec.kwargs["salt"]`` holds instead of a test salt: this prefix and the salt's


def check_int(name: str, value: Any, low: int) -> int:
    """``value`` as an int if it is an integer ≥ ``low`` (a bool is not); else an error naming
    ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise HeuresisError(f"{name} must be an integer ≥ {low}, got {value!r}")
    return int(value)


def register_table(family: str | None, data: Any, names: Sequence[str] | None,
                   graph: Any, anonymize: bool, standardize: bool, dataset_name: str
                   ) -> tuple[str, Instance]:
    """A table given as ``data`` (``Heuresis-dataset-v0``): checked, registered under
    ``dataset_name`` and kept, so that this environment always plays this table."""
    if family is not None:
        raise HeuresisError(f"give either a family ({family!r}) or a table (data=...), "
                            "not both; gym.make('Heuresis-dataset-v0', data=X, names=..., "
                            "graph=...) plays a table")
    if data is None:
        raise HeuresisError("Heuresis-dataset-v0 needs a table: gym.make("
                            "'Heuresis-dataset-v0', data=X, names=[...], graph=None | "
                            "edge list); or load one with heuresis_env.load_dataset")
    if isinstance(data, Instance):
        table = data
    else:
        table = dataset_instance(data, names, graph, name=dataset_name,
                                 anonymize=anonymize, standardize=standardize)
    register_instance(table)
    return table.key.family, table


def check_size(d: Any, n: Any) -> None:
    """Refuse a number of variables below 2 or of rows below 10 (None: the family's own)."""
    if d is not None:
        check_int("d", d, 2)
    if n is not None:
        check_int("n", n, 10)


def check_indices(indices: Sequence[int] | None, family: str, split: str) -> tuple[int, ...]:
    """The instance indices ``reset`` draws from: ``indices`` checked, or the whole split."""
    size = split_size(family, split)
    if indices is None:
        return tuple(range(size))
    checked = tuple(check_int("an index", i, 0) for i in indices)
    bad = [i for i in checked if i >= size]
    if bad or not checked:
        raise HeuresisError(f"indices must be a non-empty list of integers in "
                            f"0..{size - 1} (the {split} split), got {list(indices)}")
    return checked


def check_reset_options(options: Mapping[str, Any] | None,
                        question_episode: bool) -> dict[str, Any]:
    """The options of ``reset``: ``index``, and ``question`` in a question episode."""
    options = dict(options or {})
    unknown = sorted(set(options) - {"index", "question"})
    if unknown or (not question_episode and "question" in options):
        raise HeuresisError(f"unknown reset option(s) {unknown or ['question']}; the only "
                            "option is 'index' (an instance index of the split), or "
                            "'question' in a question episode (task='qa')")
    return options


def check_experiments(experiments: Any, family: str, task: str, has_scm: bool) -> int:
    """The experiment budget in rows (0: the observational benchmark): an integer ≥ 0, only for
    graph episodes on instances with a structural causal model to experiment on."""
    rows = check_int("experiments", experiments, 0)
    if rows and task != "graph":
        raise HeuresisError("experiments belong to graph episodes (task='graph'); question "
                            "episodes read the observational table only")
    if rows and not has_scm:
        raise HeuresisError(f"{family!r} is a data table with no model behind it to "
                            "experiment on; experiments=ROWS needs a generated family (the "
                            "six families or a bnlearn structure)")
    return rows
