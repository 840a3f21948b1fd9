"""Experiments on the hidden SCM: fresh rows under ``do(target = value)``, drawn by the referee.

An experiment is the interventional counterpart of an instance's data: the SCM that
generated the table samples ``n`` new rows with the target's mechanism replaced by a fixed
value (in the data's standardized units) or, with ``value=None``, by values drawn one per row
from the target's own observational marginal (a randomized experiment: the target is
independent of its causes, its distribution unchanged).

The noise of an experiment is keyed by the instance key, the experiment's ordinal in its
episode (1, 2, ...) and — on a sealed test split — the salt, through the same
:func:`~heuresis_env.generation.instances.salted_seed_sequence` that keys the instances; so
the same actions replay the same rows, two policies' k-th experiments share their exogenous
noise (common random numbers for paired comparisons), and no one without the salt can
regenerate a sealed experiment. Only the environment's referee calls this module: a policy
receives rows, never the SCM.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.generation.instances import Instance, InstanceKey, salted_seed_sequence
from heuresis_env.generation.salts import SaltArgument
from heuresis_env.generation.scm import SCM

#: the largest |value| (in standard deviations of the column) an experiment may set
MAX_INTERVENTION_VALUE = 10.0
#: the most rows one experiment may draw
MAX_EXPERIMENT_ROWS = 100_000

#: what a laboratory answers: (ordinal, target index, value or None, rows) → n × d rows
Laboratory = Callable[[int, int, "float | None", int], np.ndarray]


def experiment_seed(key: InstanceKey, ordinal: int, salt: SaltArgument = None
                    ) -> np.random.SeedSequence:
    """The seed of the ``ordinal``-th experiment of an episode on ``key`` (salted on a sealed
    test split, as the instance itself)."""
    root = salted_seed_sequence({"experiments": key.to_dict()}, key.split, salt)
    return np.random.SeedSequence(root.entropy, spawn_key=(int(ordinal),))


def check_experiment(d: int, target: int, value: float | None, n: int) -> None:
    """Refuse a target out of range, a value that is not a finite number within
    ±:data:`MAX_INTERVENTION_VALUE`, or a row count out of 1..:data:`MAX_EXPERIMENT_ROWS`."""
    if isinstance(target, bool) or not isinstance(target, int | np.integer) \
            or not 0 <= target < d:
        raise HeuresisError(f"an experiment's target is a column index in 0..{d - 1}, "
                            f"got {target!r}")
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, int | float | np.number) \
                or not math.isfinite(float(value)) \
                or abs(float(value)) > MAX_INTERVENTION_VALUE:
            raise HeuresisError(f"an intervention value is a number within "
                                f"±{MAX_INTERVENTION_VALUE:g} (the data's standardized "
                                f"units), or null for a randomized experiment; got {value!r}")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) \
            or not 1 <= n <= MAX_EXPERIMENT_ROWS:
        raise HeuresisError(f"an experiment draws 1..{MAX_EXPERIMENT_ROWS} rows, got {n!r}")


def draw_experiment(scm: SCM, seed: np.random.SeedSequence, target: int,
                    value: float | None, n: int) -> np.ndarray:
    """``n`` rows (n × d, standardized as the instance's data) of ``scm`` under
    do(column ``target`` = ``value``); ``value=None`` draws each row's value from the
    target's observational marginal, with noise independent of the experiment's."""
    check_experiment(scm.d, target, value, n)
    noise, marginal = seed.spawn(2)
    name = scm.names[int(target)]
    if value is None:
        ancestors = scm.ancestral_subset([name])
        values = ancestors.sample(n, np.random.Generator(np.random.PCG64(marginal)))
        setting: float | np.ndarray = values[:, ancestors.index(name)]
    else:
        setting = float(value)
    return scm.sample(n, np.random.Generator(np.random.PCG64(noise)), {name: setting})


def make_laboratory(instance: Instance, salt: SaltArgument) -> Laboratory | None:
    """The referee's experiment closure over an instance's SCM (None for a data table, which
    has no SCM to experiment on). The SCM and the salt live only in the closure's cells."""
    scm = instance.record.scm
    if scm is None:
        return None
    key = instance.key

    def laboratory(ordinal: int, target: int, value: float | None, n: int) -> np.ndarray:
        rows = draw_experiment(scm, experiment_seed(key, ordinal, salt), target, value, n)
        rows.flags.writeable = False
        return rows

    return laboratory


__all__ = ["MAX_EXPERIMENT_ROWS", "MAX_INTERVENTION_VALUE", "Laboratory", "check_experiment",
           "draw_experiment", "experiment_seed", "make_laboratory"]
