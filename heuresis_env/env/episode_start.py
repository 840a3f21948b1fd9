"""Starting an episode: the instance a reset plays (``options["index"]`` or a seeded draw
from the environment's indices) opened through the referee, and the state the episode starts
from (an empty working graph, or PC-KCI's output when guided)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from heuresis_env.env.arguments import check_int
from heuresis_env.env.referee import PublicInstance, open_instance
from heuresis_env.env.toolbox.regimes import Regimes
from heuresis_env.env.toolbox.state import EpisodeState
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import EvidenceProvider, start_graph_for_edits
from heuresis_env.generation.instances import Instance, InstanceKey, split_size
from heuresis_env.generation.salts import SaltArgument
from heuresis_env.graphs import Graph
from heuresis_env.questions import PublicQuestion


def instance_index(options: Mapping[str, Any], family: str, split: str,
                   indices: tuple[int, ...], rng: np.random.Generator) -> int:
    """The instance a graph episode plays: ``options["index"]``, else one drawn from
    ``indices`` with the environment's generator."""
    if options.get("index") is not None:
        index = check_int("options['index']", options["index"], 0)
        size = split_size(family, split)
        if index >= size:
            raise HeuresisError(f"options['index'] must be in 0..{size - 1} for the "
                                f"{split} split of {family}, got {index}")
        return index
    return int(indices[int(rng.integers(len(indices)))])


def open_episode_instance(key: InstanceKey, salt: SaltArgument, table: Instance | None,
                          shaped: bool) -> tuple[PublicInstance, dict[str, Callable]]:
    """The instance of ``key`` (a table given to the environment plays as that key) through
    the referee: its public part and the referee's closures."""
    if table is not None:
        table = table if key == table.key else replace(table, key=key)
    public, referee = open_instance(key, salt, table)
    if not public.has_ground_truth and shaped:
        raise HeuresisError("reward='shaped' needs the true graph, and this data table "
                            "has none; use reward='f1' (the episode then ends unscored)")
    return public, referee


def starting_state(public: PublicInstance, names: tuple[str, ...], guided: bool,
                   rl_view: bool, target: str, toolbox: str,
                   question: PublicQuestion | None, experiment_rows: int = 0,
                   referee: Mapping[str, Callable] | None = None
                   ) -> tuple[EpisodeState, EvidenceProvider]:
    """The episode's state, its working graph empty or (guided) PC-KCI's output, as the RL
    view edits it when ``rl_view``; and the evidence of the instance. With
    ``experiment_rows`` the state holds the regimes, whose experiments the referee's
    laboratory draws."""
    evidence = EvidenceProvider(public.X, public.names, public.sha256)
    start_graph = None
    if guided:
        start_graph = evidence.guided_start().graph
        if rl_view:
            start_graph = start_graph_for_edits(start_graph)
        start_graph = Graph(names, start_graph.marks)
    regimes = None
    if experiment_rows:
        regimes = Regimes(public.X, names, experiment_rows,
                          None if referee is None else referee.get("laboratory"))
    state = EpisodeState(public.X, names, public.sha256, guided=guided, target=target,
                         toolbox=toolbox, evidence=evidence, working_graph=start_graph,
                         question=question, regimes=regimes)
    return state, evidence
