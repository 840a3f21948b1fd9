"""Trained repair policies on the RL view: train with (Maskable)PPO, evaluate, save, load.

A repair policy starts from PC-KCI's output (the guided start) and edits it one discrete
action at a time (add, remove, orient, test, submit; ``heuresis_env.env.rl_view``).
:func:`train` learns one on the development instances of a family with sb3-contrib's
``MaskablePPO`` (invalid actions masked through ``action_masks()``) or plain ``PPO`` (the
observation flattened to one ``Box``; an invalid action is then an error step that costs a
step and changes nothing), evaluates it against the guided start on held-out test instances
with a paired bootstrap, and writes ``model.npz`` + ``model.json`` (the network, no pickle:
:mod:`~agents.rl.model_files`), ``policy.json``, ``report.json`` and a
learning curve. :func:`load` returns an :class:`RLPolicy`, a
:class:`~heuresis_env.policy.Policy` like any other (entry point ``rl`` with ``path=``).

One concept per module, in the order data flows through them:

- :mod:`~agents.rl.spaces` — the observation layout and the action mask recomputed from an
  observation;
- :mod:`~agents.rl.network` — the pairwise network (``architecture="pairwise"``; SB3's
  default MLP, ``architecture="mlp"``, is kept for comparison);
- :mod:`~agents.rl.envs` — the training and evaluation environments, their wrappers, and the
  instances' evidence computed beforehand;
- :mod:`~agents.rl.policy` — :class:`RLPolicy`, :class:`SubmitStartPolicy`, save and load;
- :mod:`~agents.rl.warm_starting` — the warm start from one-step edits;
- :mod:`~agents.rl.plots` — the learning curve;
- :mod:`~agents.rl.training` — :func:`train` and its :class:`TrainingReport`.

The ``heuresis train`` subcommand (also ``python -m agents.rl``) reads its arguments in
:mod:`~agents.rl.cli` and runs :mod:`~agents.rl.commands`. ``docs/rl.md`` gives the evidence
for each design choice.

Models are saved and read without pickle (:mod:`~agents.rl.model_files`); a
stable-baselines3 ``model.zip`` is refused (``scripts/convert_models.py rl`` converts a
trusted one).

The names below load on first use (:mod:`agents.faces`), so that ``agents.rl.policy``'s entry
points do not load torch before a model is needed.
"""

from typing import TYPE_CHECKING

from agents.faces import lazy_face

if TYPE_CHECKING:  # what type checkers see; at run time each name loads on first use
    from agents.rl.envs import (
        FamilyMix,
        RepairActionMask,
        StepCost,
        SubmitAsPass,
        environment_kwargs,
        evaluate_policy,
        make_training_env,
        warm_evidence,
    )
    from agents.rl.model_files import read_model, write_model
    from agents.rl.network import (
        P_VALUE_COLUMNS,
        PAIR_OUTPUTS,
        REPAIR_P_VALUE_COLUMNS,
        PairActionHead,
        PairwiseExtractor,
        PairwiseLatent,
        PairwiseMaskablePolicy,
        PairwisePolicy,
    )
    from agents.rl.plots import binned_curve, plot_learning_curve
    from agents.rl.policy import (
        ALGORITHMS,
        ARCHITECTURES,
        CONFIG_FILE,
        DEFAULT_MODEL,
        MODEL_FILE,
        SHIPPED_MODEL_DIR,
        SHIPPED_MODELS,
        RLPolicy,
        SubmitStartPolicy,
        load,
        policy_config,
        save,
    )
    from agents.rl.spaces import (
        FLAT_KEYS,
        OBSERVATION_KEYS,
        ActionMasker,
        ObservationLayout,
        uses_orientations,
    )
    from agents.rl.training import (
        CURVE_FILE,
        DEFAULT_HYPERPARAMETERS,
        REPORT_FILE,
        SCRATCH_HYPERPARAMETERS,
        EntropySchedule,
        LearningCurveCallback,
        TrainingReport,
        train,
    )
    from agents.rl.warm_starting import REWARD_SCALE, EditProbes, probe_edits, warm_start

#: public name → the module of this package that defines it
_EXPORTS = {
    "ActionMasker": "spaces",
    "FLAT_KEYS": "spaces",
    "OBSERVATION_KEYS": "spaces",
    "ObservationLayout": "spaces",
    "uses_orientations": "spaces",
    "PAIR_OUTPUTS": "network",
    "P_VALUE_COLUMNS": "network",
    "PairActionHead": "network",
    "PairwiseExtractor": "network",
    "PairwiseLatent": "network",
    "PairwiseMaskablePolicy": "network",
    "PairwisePolicy": "network",
    "REPAIR_P_VALUE_COLUMNS": "network",
    "FamilyMix": "envs",
    "RepairActionMask": "envs",
    "StepCost": "envs",
    "SubmitAsPass": "envs",
    "environment_kwargs": "envs",
    "evaluate_policy": "envs",
    "make_training_env": "envs",
    "warm_evidence": "envs",
    "ALGORITHMS": "policy",
    "ARCHITECTURES": "policy",
    "CONFIG_FILE": "policy",
    "DEFAULT_MODEL": "policy",
    "MODEL_FILE": "policy",
    "RLPolicy": "policy",
    "SHIPPED_MODELS": "policy",
    "SHIPPED_MODEL_DIR": "policy",
    "SubmitStartPolicy": "policy",
    "load": "policy",
    "policy_config": "policy",
    "save": "policy",
    "binned_curve": "plots",
    "plot_learning_curve": "plots",
    "EditProbes": "warm_starting",
    "REWARD_SCALE": "warm_starting",
    "probe_edits": "warm_starting",
    "warm_start": "warm_starting",
    "CURVE_FILE": "training",
    "DEFAULT_HYPERPARAMETERS": "training",
    "EntropySchedule": "training",
    "LearningCurveCallback": "training",
    "REPORT_FILE": "training",
    "SCRATCH_HYPERPARAMETERS": "training",
    "TrainingReport": "training",
    "train": "training",
    "read_model": "model_files",
    "write_model": "model_files",
}


__all__ = [
    "ALGORITHMS", "ARCHITECTURES", "ActionMasker", "CONFIG_FILE", "CURVE_FILE",
    "DEFAULT_HYPERPARAMETERS", "DEFAULT_MODEL", "EditProbes", "EntropySchedule", "FLAT_KEYS",
    "FamilyMix", "LearningCurveCallback", "MODEL_FILE", "OBSERVATION_KEYS", "ObservationLayout",
    "PAIR_OUTPUTS", "P_VALUE_COLUMNS", "PairActionHead", "PairwiseExtractor", "PairwiseLatent",
    "PairwiseMaskablePolicy", "PairwisePolicy", "REPAIR_P_VALUE_COLUMNS", "REPORT_FILE",
    "REWARD_SCALE", "RLPolicy", "RepairActionMask", "SCRATCH_HYPERPARAMETERS", "SHIPPED_MODELS",
    "SHIPPED_MODEL_DIR", "StepCost", "SubmitAsPass", "SubmitStartPolicy", "TrainingReport",
    "binned_curve", "environment_kwargs", "evaluate_policy", "load", "make_training_env",
    "plot_learning_curve", "policy_config", "probe_edits", "read_model", "save", "train",
    "uses_orientations", "warm_evidence", "warm_start", "write_model",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
