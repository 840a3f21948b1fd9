"""Rows of a table that coincide, and why: two arms with the same score on every instance of a
family, told apart by what they submitted (the same graphs, the same skeletons — adjacency F1
reads only the skeleton —, or different graphs that happen to score the same).

A reader who sees ``anm`` and ``pc-kci`` with equal cells everywhere should not have to guess
whether the table is broken: :func:`coinciding_note` writes the one line under the headline
that names such rows and the reason read from the runs' final graphs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from heuresis_env.reports.loading import Arm, EpisodeRecord

#: the reasons, from the strongest to the weakest agreement
SAME_GRAPHS = "they submitted the same graphs"
SAME_SKELETONS = "they submitted the same skeletons, all that adjacency F1 reads"
SAME_SCORES = "different graphs with equal F1"
NO_GRAPHS = "equal F1; the runs hold no final graphs to compare"
#: how the note begins
COINCIDING = "Rows that coincide"


def _same_scores(a: Arm, b: Arm, family: str, score: str) -> bool:
    """Both arms played the same instances of ``family`` and score equally on each."""
    instances = a.instances(family)
    if not instances or instances != b.instances(family):
        return False
    for instance in instances:
        x, y = a.instance_score(instance, score), b.instance_score(instance, score)
        if not (x == y or (math.isnan(x) and math.isnan(y))):
            return False
    return True


def _marks(episode: EpisodeRecord | None) -> np.ndarray | None:
    graph = None if episode is None else episode.final_graph
    if not isinstance(graph, dict) or "marks" not in graph:
        return None
    return np.asarray(graph["marks"])


def _agreement(a: Arm, b: Arm, families: Sequence[str]) -> str:
    """How far the arms' final graphs agree on the instances of ``families``."""
    same_graphs = True
    for slot, first in a.episodes.items():
        if first.family not in families:
            continue
        x, y = _marks(first), _marks(b.episodes.get(slot))
        if x is None or y is None:
            return NO_GRAPHS
        if x.shape != y.shape:
            return SAME_SCORES
        if not np.array_equal(x, y):
            same_graphs = False
            if not np.array_equal((x != 0) | (x.T != 0), (y != 0) | (y.T != 0)):
                return SAME_SCORES
    return SAME_GRAPHS if same_graphs else SAME_SKELETONS


def coinciding_rows(arms: Sequence[Arm], families: Sequence[str],
                    score: str = "f1") -> list[tuple[Arm, Arm, list[str], str]]:
    """``(arm, earlier arm, families, reason)`` for every arm whose cells equal an earlier
    arm's on at least one family (the earlier arm it shares the most families with)."""
    found = []
    for k, arm in enumerate(arms):
        best: tuple[Arm, list[str]] | None = None
        for other in arms[:k]:
            shared = [f for f in families if _same_scores(other, arm, f, score)]
            if shared and (best is None or len(shared) > len(best[1])):
                best = (other, shared)
        if best is not None:
            found.append((arm, best[0], best[1], _agreement(best[0], arm, best[1])))
    return found


def coinciding_note(arms: Sequence[Arm], families: Sequence[str], score: str = "f1") -> str:
    """One line naming the rows that coincide and why, or "" when none does."""
    rows = coinciding_rows(arms, families, score)
    if not rows:
        return ""
    parts = []
    for arm, other, shared, reason in rows:
        where = ("on every family" if len(shared) == len(families)
                 else f"on {', '.join(shared)}")
        parts.append(f"{other.label} = {arm.label} {where} ({reason})")
    return f"{COINCIDING} (equal F1 on every instance): " + "; ".join(parts) + "."
