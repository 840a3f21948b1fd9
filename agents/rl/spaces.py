"""The RL view as a repair policy sees it: where each part of an observation lies
(:class:`ObservationLayout`) and the action mask recomputed from an observation
(:class:`ActionMasker`), so that a policy driven only by observations respects the
environment's masks."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from agents.checks import check_choice
from heuresis_env.env import (
    ACYCLIC_TARGETS,
    LAYOUT_KEYS,
    RL_OBSERVATION_LAYOUT,
    RL_OPERATIONS,
    TARGETS,
    rl_action_table,
)
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import FEATURE_NAMES, REPAIR_FEATURE_NAMES

__all__ = ["FLAT_KEYS", "OBSERVATION_KEYS", "ActionMasker", "ObservationLayout",
           "uses_orientations"]

#: RL-view observation keys in the order ``gymnasium.spaces.flatten`` concatenates them
#: (sorted), per observation layout version
FLAT_KEYS = {version: tuple(sorted(keys)) for version, keys in LAYOUT_KEYS.items()}
#: the current layout's keys in flattening order
OBSERVATION_KEYS = FLAT_KEYS[RL_OBSERVATION_LAYOUT]


@dataclass(frozen=True)
class ObservationLayout:
    """Where each part of an RL-view observation lies, for the Dict or the flattened Box."""

    d: int
    n_features: int = len(FEATURE_NAMES)
    version: int = RL_OBSERVATION_LAYOUT
    n_repair: int = len(REPAIR_FEATURE_NAMES)

    @property
    def n_pairs(self) -> int:
        return self.d * (self.d - 1) // 2

    @property
    def sizes(self) -> dict[str, int]:
        """Sizes in the order ``gymnasium.spaces.flatten`` concatenates them (sorted keys)."""
        pair_values = self.n_pairs * self.n_features
        repair_values = self.n_pairs * self.n_repair
        sizes = {"adjacency": self.d * self.d, "budget_left": 1, "evidence": pair_values,
                 "evidence_available": pair_values, "repair": repair_values,
                 "repair_available": repair_values}
        return {key: sizes[key] for key in FLAT_KEYS[self.version]}

    @property
    def flat_size(self) -> int:
        return sum(self.sizes.values())

    @classmethod
    def from_space(cls, space: spaces.Space) -> ObservationLayout:
        """The layout of an RL-view observation space (a ``Dict`` or its flattened ``Box``)."""
        n_features = len(FEATURE_NAMES)
        if isinstance(space, spaces.Dict):
            if "adjacency" not in space.spaces:
                raise HeuresisError(f"not an RL-view observation space: keys "
                                    f"{sorted(space.spaces)}; expected adjacency, budget_left, "
                                    "evidence, evidence_available")
            d = math.isqrt(int(np.prod(space["adjacency"].shape)))
            layout = cls(d, n_features, 2 if "repair" in space.spaces else 1)
            if int(np.prod(space["evidence"].shape)) != layout.sizes["evidence"]:
                raise HeuresisError("the observation's evidence does not hold "
                                    f"{n_features} features per pair of {d} variables")
            return layout
        if isinstance(space, spaces.Box) and len(space.shape) == 1:
            for version in sorted(FLAT_KEYS, reverse=True):
                for d in range(2, 200):
                    layout = cls(d, n_features, version)
                    if layout.flat_size == space.shape[0]:
                        return layout
                    if layout.flat_size > space.shape[0]:
                        break
        raise HeuresisError(f"cannot read an RL-view layout from {space}; expected the RL "
                            "view's Dict space or its flattened Box")

    def split(self, observation: Any) -> dict[str, Any]:
        """The named parts of an observation batch (a dict of tensors or a flat tensor)."""
        if isinstance(observation, dict):
            return observation
        parts, start = {}, 0
        for key, size in self.sizes.items():
            parts[key] = observation[..., start:start + size]
            start += size
        return parts


class ActionMasker:
    """The RL view's action mask, recomputed from an observation and the pairs already tested.

    It reproduces ``env.unwrapped.action_masks()`` (add between non-adjacent variables,
    remove and orient on edges, no orientation closing a directed cycle under the cpdag and
    dag targets, each pair tested once, submit always), so a policy driven only by
    observations — as the evaluation runner drives it — respects the same masks.
    ``orient=False`` also masks every orientation (see :func:`uses_orientations`).
    """

    def __init__(self, d: int, target: str = "none", orient: bool = True):
        check_choice("target", target, TARGETS)
        self.d, self.target, self.orient = d, target, bool(orient)
        table = rl_action_table(d)
        self.n_actions = len(table)
        operations = np.array([a.operation for a in table])
        self.slices = {}
        for operation in RL_OPERATIONS:
            rows = np.flatnonzero(operations == operation)
            self.slices[operation] = slice(int(rows[0]), int(rows[-1]) + 1)
        pairs = table[self.slices["add"]]
        self.pair_i = np.array([a.i for a in pairs], dtype=np.int64)
        self.pair_j = np.array([a.j for a in pairs], dtype=np.int64)
        self.pair_row = np.full((d, d), -1, dtype=np.int64)
        self.pair_row[self.pair_i, self.pair_j] = np.arange(len(pairs))
        self.pair_row[self.pair_j, self.pair_i] = np.arange(len(pairs))
        orient = table[self.slices["orient"]]
        self.orient_i = np.array([a.i for a in orient], dtype=np.int64)
        self.orient_j = np.array([a.j for a in orient], dtype=np.int64)
        self.test_start = self.slices["test"].start

    def __call__(self, adjacency: np.ndarray, tested: np.ndarray) -> np.ndarray:
        """Mask for the observation's ``adjacency`` (d·d, 0/1) and a bool per pair tested."""
        d = self.d
        tails = np.asarray(adjacency).reshape(d, d) != 0  # [a, b]: tail at a on the a–b edge
        present = tails | tails.T
        directed = tails & ~tails.T  # a → b
        mask = np.empty(self.n_actions, dtype=bool)
        adjacent = present[self.pair_i, self.pair_j]
        mask[self.slices["add"]] = ~adjacent
        mask[self.slices["remove"]] = adjacent
        a, b = self.orient_i, self.orient_j
        valid = present[a, b] & ~directed[a, b]
        if self.target in ACYCLIC_TARGETS and directed.any():
            reach = directed.astype(np.float64)
            for _ in range(max(1, (d - 1).bit_length())):
                reach = np.minimum(reach + reach @ reach, 1.0)
            via_other = directed.astype(np.float64) @ reach
            # reversing b → a closes a cycle iff another path b → c ⇝ a exists; orienting an
            # undirected a – b closes one iff b ⇝ a already
            closes = np.where(directed[b, a], via_other[b, a], reach[b, a]) > 0
            valid &= ~closes
        mask[self.slices["orient"]] = valid & self.orient
        mask[self.slices["test"]] = ~np.asarray(tested, dtype=bool)
        mask[self.slices["submit"]] = True
        return mask

    def without_edits(self, mask: np.ndarray, edited: np.ndarray) -> np.ndarray:
        """``mask`` with add and remove refused for the pairs marked in ``edited``."""
        mask = mask.copy()
        mask[self.slices["add"]] &= ~edited
        mask[self.slices["remove"]] &= ~edited
        return mask

    def operation(self, action: int) -> tuple[str, int]:
        """(operation, pair row or −1) of an action index."""
        for name, part in self.slices.items():
            if part.start <= action < part.stop:
                if name == "orient":
                    k = action - part.start
                    return name, int(self.pair_row[self.orient_i[k], self.orient_j[k]])
                if name == "submit":
                    return name, -1
                return name, action - part.start
        raise HeuresisError(f"action {action} is out of range 0..{self.n_actions - 1}")


def uses_orientations(target: str) -> bool:
    """Whether a repair policy orients edges: not under ``target="none"``, where adjacency F1
    ignores directions and an orientation would only spend a step."""
    return target != "none"
