"""``train``: learn a repair policy on the development instances of a family with
(Maskable)PPO, evaluate it against the guided start on held-out test instances with a paired
bootstrap, and write ``model.npz`` + ``model.json`` (the network, no pickle), ``policy.json``,
``report.json`` and a learning curve.

Training pays the change in adjacency F1 of every edit (``reward="shaped"``); submit is a
pass and the policy neither orients under ``target="none"`` nor undoes its own edits
(:mod:`agents.rl.envs`); by default the policy starts from the warm start
(:mod:`agents.rl.warm_starting`). ``docs/rl.md`` gives the evidence for each choice.

Randomness: our own draws come from explicit generators; stable-baselines3 seeds torch and
its own minibatch shuffling from ``seed`` (it uses NumPy's global generator internally).
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import sb3_contrib
import stable_baselines3
import torch
from stable_baselines3.common.callbacks import BaseCallback

from agents.checks import check_choice, check_int
from agents.rl.envs import evaluate_policy, make_training_env, warm_evidence
from agents.rl.model_files import DESCRIPTION_FILE
from agents.rl.network import PairwiseMaskablePolicy, PairwisePolicy
from agents.rl.plots import binned_curve, plot_learning_curve
from agents.rl.policy import (
    ALGORITHMS,
    ARCHITECTURES,
    CONFIG_FILE,
    MODEL_FILE,
    RLPolicy,
    SubmitStartPolicy,
    algorithm_class,
    policy_config,
    save,
)
from agents.rl.warm_starting import probe_edits, warm_start
from heuresis_env.env import RL_OPERATIONS
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import EVIDENCE_VERSION
from heuresis_env.generation import SPLIT_SIZES, expand_families
from heuresis_env.metrics import paired_bootstrap
from heuresis_env.policy import EpisodeResult, EpisodeSettings, Policy
from heuresis_env.progress import Progress
from heuresis_env.threads import available_cpus
from heuresis_env.version import __version__

__all__ = [
    "CURVE_FILE",
    "DEFAULT_HYPERPARAMETERS",
    "REPORT_FILE",
    "SCRATCH_HYPERPARAMETERS",
    "EntropySchedule",
    "LearningCurveCallback",
    "TrainingProgress",
    "TrainingReport",
    "train",
]

REPORT_FILE = "report.json"
CURVE_FILE = "learning_curve.png"
#: PPO settings used unless ``train(hyperparameters=...)`` overrides them
DEFAULT_HYPERPARAMETERS: dict[str, Any] = {
    "learning_rate": 1e-4, "n_steps": 256, "batch_size": 256, "n_epochs": 4,
    "gamma": 0.9, "gae_lambda": 0.9, "clip_range": 0.2, "ent_coef": 0.002,
    "ent_coef_final": 0.0, "vf_coef": 0.5, "max_grad_norm": 0.5,
}
#: PPO settings for training from a random policy (``warm_start_edits=False``): a strong
#: entropy bonus at first, since nearly every random edit lowers F1
SCRATCH_HYPERPARAMETERS: dict[str, Any] = {
    **DEFAULT_HYPERPARAMETERS, "learning_rate": 5e-4, "ent_coef": 0.05, "ent_coef_final": 0.005,
}


def _means(results: Sequence[EpisodeResult]) -> dict[str, float]:
    keys = ("f1", "precision", "recall", "shd", "nshd", "n_edges")
    out = {key: float(np.nanmean([r.scores.get(key, np.nan) for r in results]))
           for key in keys}
    out["truncated"] = float(np.mean([r.truncated for r in results]))
    out["steps"] = float(np.mean([r.steps for r in results]))
    return out


# ---- learning curve ----------------------------------------------------------------------------

class EntropySchedule(BaseCallback):
    """Decays the entropy bonus linearly from ``start`` to ``final`` over the training run.

    Early on, most edits lower F1, and without a strong bonus the policy settles on
    submitting at once before it has learnt which edits pay; later the bonus fades so that
    the policy can commit to the edits it has found.
    """

    def __init__(self, start: float, final: float, total_steps: int):
        super().__init__()
        self.start, self.final, self.total_steps = float(start), float(final), int(total_steps)

    def _on_step(self) -> bool:
        progress = min(self.num_timesteps / max(self.total_steps, 1), 1.0)
        self.model.ent_coef = self.start + (self.final - self.start) * progress
        return True


class LearningCurveCallback(BaseCallback):
    """Records every finished training episode: time step, F1 gain (the shaped return), final
    F1 and length."""

    def __init__(self):
        super().__init__()
        self.episodes: list[dict[str, float]] = []

    def _on_step(self) -> bool:
        for done, info in zip(self.locals["dones"], self.locals["infos"]):
            if not done or "episode" not in info:
                continue
            scores = info.get("scores", {})
            self.episodes.append({"timestep": float(self.num_timesteps),
                                  "f1_gain": float(info["episode"]["r"]),
                                  "f1": float(scores.get("f1", np.nan)),
                                  "length": float(info["episode"]["l"])})
        return True


class TrainingProgress(BaseCallback):
    """Shows PPO's progress (:class:`~heuresis_env.progress.Progress`): a bar with the time
    left on a terminal, else a line at most every ``every_seconds`` through ``say`` (steps
    done, elapsed, the time left, and the mean F1 gain of the last training episodes read
    from ``curve``), the last one once — PPO runs on to the end of its rollout."""

    def __init__(self, total_steps: int, say: Callable[[str], None],
                 curve: LearningCurveCallback | None = None, every_seconds: float = 30.0,
                 show_bar: bool = True):
        super().__init__()
        self.total = int(total_steps)
        self.curve = curve
        self.progress = Progress(self.total, "PPO", unit="step", say=say,
                                 every_seconds=every_seconds, show=show_bar)

    def _recent_gain(self) -> str:
        episodes = [] if self.curve is None else self.curve.episodes[-50:]
        if not episodes:
            return ""
        return f"mean F1 gain of the last {len(episodes)} episodes " \
               f"{np.mean([e['f1_gain'] for e in episodes]):+.3f}"

    def _on_step(self) -> bool:
        self.progress.set(int(self.num_timesteps), self._recent_gain())
        return True

    def _on_training_end(self) -> None:
        self.progress.close()


@dataclass
class TrainingReport:
    """What :func:`train` did and measured; ``to_dict`` is the JSON report."""

    family: str
    algo: str
    architecture: str
    steps: int
    seed: int
    n_envs: int
    dev_indices: list[int]
    test_indices: list[int]
    d: int
    n: int
    settings: dict[str, Any]
    step_cost: float
    hyperparameters: dict[str, Any]
    evidence_seconds: float
    training_seconds: float
    training_cpu_seconds: float
    evaluation_seconds: float
    policy_f1: list[float]
    start_f1: list[float]
    policy_means: dict[str, float]
    start_means: dict[str, float]
    f1_difference: dict[str, Any]
    policy_actions: dict[str, float]
    learning_curve: list[dict[str, float]]
    warm_start: dict[str, Any]
    out_dir: str
    files: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    #: a group of families (``all``): each family's test F1s and paired difference
    per_family: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the split of the evaluation instances: test, or dev instances held out from training
    test_split: str = "test"
    #: the policy before any training on the same instances (its means, its paired difference)
    untrained: dict[str, Any] = field(default_factory=dict)

    @property
    def policy_mean_f1(self) -> float:
        return self.policy_means["f1"]

    @property
    def start_mean_f1(self) -> float:
        return self.start_means["f1"]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        diff = self.f1_difference
        where = "test" if self.test_split == "test" else "held-out dev"
        return (f"{self.family} {where} (n={len(self.test_indices)}): F1 policy "
                f"{self.policy_mean_f1:.3f} vs guided start (PC-KCI) {self.start_mean_f1:.3f}; "
                f"difference {diff['mean']:+.3f} [{diff['low']:+.3f}, {diff['high']:+.3f}] "
                f"(paired 95% bootstrap); trained {self.steps} steps in "
                f"{self.training_seconds:.0f} s wall, {self.training_cpu_seconds:.0f} s CPU "
                f"({self.algo}, {self.architecture})")


def _versions() -> dict[str, str]:
    return {"heuresis": __version__, "stable_baselines3": stable_baselines3.__version__,
            "sb3_contrib": sb3_contrib.__version__, "torch": torch.__version__,
            "evidence_version": str(EVIDENCE_VERSION)}


def _indices(name: str, value: int | Sequence[int], split: str) -> list[int]:
    size = SPLIT_SIZES[split]
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        if not 1 <= value <= size:
            raise HeuresisError(f"{name} must be in 1..{size} (the {split} split), got {value}")
        return list(range(int(value)))
    chosen = [int(v) for v in value]
    if not chosen or any(not 0 <= v < size for v in chosen):
        raise HeuresisError(f"{name} must be non-empty indices in 0..{size - 1}, got {chosen}")
    return chosen


def train(family: str = "wild", algo: str = "maskable_ppo", steps: int = 20_000,
          out_dir: str | os.PathLike = "runs/rl", seed: int = 0, n_envs: int = 2,
          dev_count: int | Sequence[int] = 100, test_count: int | Sequence[int] = 32,
          d: int = 10, n: int = 600, max_steps: int = 50, target: str = "none",
          architecture: str = "pairwise", hidden: int = 64, step_cost: float = 0.0,
          hyperparameters: dict[str, Any] | None = None, workers: int | None = None,
          torch_threads: int | None = 1, vectorization: str = "dummy",
          n_resamples: int = 10_000, salt: str | None = None,
          warm_start_edits: bool | None = None, freeze_encoder: bool | None = None,
          warm_start_options: dict[str, Any] | None = None,
          progress: Callable[[str], None] | None = None,
          test_split: str = "test") -> TrainingReport:
    """Train a repair policy on ``dev_count`` development instances of ``family`` (guided:
    starting from PC-KCI's output) and evaluate it against that guided start on ``test_count``
    test instances; writes model, config, report and learning curve into ``out_dir``.

    ``family`` may be a group (``all``: the six benchmark families): one policy then trains on
    the development instances of every family, episodes mixed by :class:`FamilyMix`, and is
    evaluated on the test instances of each (``per_family`` in the report).

    ``dev_count``/``test_count`` are a count (the first instances) or explicit indices;
    ``test_split="dev"`` evaluates on development instances held out from training instead
    (``test_count`` then names them, disjoint from ``dev_count``'s). The
    evidence of every instance is computed first (``workers`` processes, by default one per
    available CPU; a bar or progress lines with the time left), so the training time excludes
    it. ``max_steps`` is the episode budget for training and evaluation.

    ``warm_start_edits`` (default: on for the pairwise architecture) first tries every single
    edit from each development instance's start state (:func:`probe_edits`, 3p steps per
    instance, counted in the report) and fits the policy to those rewards
    (:func:`warm_start`); PPO then trains ``steps`` more steps. Without it PPO starts from
    a random policy, which on ``wild`` settles on submitting the guided start unchanged.
    """
    steps, n_envs, max_steps, hidden = _checked(algo, architecture, step_cost, steps=steps,
                                                n_envs=n_envs, max_steps=max_steps,
                                                hidden=hidden)
    families = expand_families(family)
    warm_start_edits = _warm_start_wanted(warm_start_edits, architecture)
    dev, test = _split_indices(dev_count, test_count, test_split)
    settings = EpisodeSettings(max_steps=max_steps, max_seconds=None, guided=True, target=target)
    params = _hyperparameters(bool(warm_start_edits), hyperparameters, n_envs)
    say = progress or (lambda message: None)
    out = _output_folder(out_dir, torch_threads)

    evidence_seconds = _evidence(family, dev, test, test_split, d, n, workers, salt, say,
                                 show=progress is not None)
    flatten = algo == "ppo"
    env = make_training_env(family, settings, dev, d, n, n_envs=n_envs, flatten=flatten,
                            step_cost=step_cost, seed=seed, vectorization=vectorization)
    model = _new_model(algo, architecture, env, hidden, seed, params)
    config = policy_config(algo, architecture, family, d, n, settings, hidden=hidden,
                           steps=steps, seed=seed, warm_start=bool(warm_start_edits))
    evaluate = functools.partial(evaluate_policy, family=family, split=test_split,
                                 indices=test, settings=settings, d=d, n=n, salt=salt)
    # the policy before any training, on the evaluation instances: where learning starts from
    untrained_results = evaluate(RLPolicy(model, config, seed=seed))
    warm, warm_policy_results = _warm_started(
        model, config, family, settings, dev, d, n, flatten, seed, warm_start_edits,
        warm_start_options, evaluate, say)
    warm["freeze_encoder"] = _freeze_encoder(model, freeze_encoder, bool(warm_start_edits))
    say(f"training {algo} ({architecture}) for {steps} steps on {n_envs} environment(s)")
    callback, training_seconds, training_cpu_seconds = _learn(
        model, params, steps, say, show=progress is not None)
    env.close()

    save(model, config, out, provenance={"written_by": "agents.rl.train", "family": family,
                                         "steps": steps, "seed": seed})

    say(f"evaluating on {len(test)} {test_split} instances"
        f"{' held out from training' if test_split == 'dev' else ''}")
    return _evaluated_report(
        evaluate, RLPolicy(model, config, deterministic=True, seed=seed), families,
        _Gains(n_resamples, seed, []), untrained_results, warm_policy_results,
        family=family, algo=algo, architecture=architecture, steps=steps, seed=seed,
        n_envs=n_envs, dev_indices=dev, test_indices=test, d=d, n=n,
        settings=settings.to_dict(), step_cost=float(step_cost), hyperparameters=params,
        evidence_seconds=evidence_seconds, training_seconds=training_seconds,
        training_cpu_seconds=training_cpu_seconds,
        learning_curve=binned_curve(callback.episodes), warm_start=warm, out_dir=str(out),
        versions=_versions(), test_split=test_split)


def _evaluated_report(evaluate: Callable[[Policy], list[EpisodeResult]], policy: Policy,
                      families: Sequence[str], gains: _Gains,
                      untrained_results: list[EpisodeResult],
                      warm_policy_results: list[EpisodeResult],
                      **fields: Any) -> TrainingReport:
    """The trained policy and the guided start on the evaluation instances, compared (and
    the untrained and warm-started policies' results), as the report, written to its
    folder with the learning curve's plot."""
    started = time.perf_counter()
    policy_results = evaluate(policy)
    start_results = evaluate(SubmitStartPolicy())
    evaluation_seconds = time.perf_counter() - started
    gains = replace(gains, start_f1=[float(r.scores["f1"]) for r in start_results])
    policy_f1 = [float(r.scores["f1"]) for r in policy_results]
    difference = gains.over_start(policy_f1)
    actions = {operation: float(np.mean([r.usage["actions"].get(operation, 0)
                                         for r in policy_results]))
               for operation in RL_OPERATIONS}
    report = TrainingReport(
        **fields, evaluation_seconds=evaluation_seconds, policy_f1=policy_f1,
        start_f1=gains.start_f1, policy_means=_means(policy_results),
        start_means=_means(start_results), f1_difference=asdict(difference),
        policy_actions=actions,
        per_family=gains.per_family(families, len(fields["test_indices"]), policy_f1))
    report.untrained = {"means": _means(untrained_results), "f1_difference": asdict(
        gains.over_start([float(r.scores["f1"]) for r in untrained_results]))}
    if warm_policy_results:
        report.warm_start["test_means"] = _means(warm_policy_results)
        report.warm_start["f1_difference"] = asdict(gains.over_start(
            [float(r.scores["f1"]) for r in warm_policy_results]))
    _write_report(report, report.learning_curve, difference)
    return report


def _checked(algo: str, architecture: str, step_cost: float, **counts: int) -> list[int]:
    """The choices checked, and the counts (in their order) as checked integers."""
    check_choice("RL algorithm", algo, ALGORITHMS)
    check_choice("architecture", architecture, ARCHITECTURES)
    checked = [check_int(name, value) for name, value in counts.items()]
    if not (isinstance(step_cost, int | float) and 0 <= step_cost < 1):
        raise HeuresisError(f"step_cost must be a number in [0, 1), got {step_cost!r}")
    return checked


def _output_folder(out_dir: str | os.PathLike, torch_threads: int | None) -> Path:
    """The output folder, made; torch's threads set (None: left as they are)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if torch_threads is not None:
        torch.set_num_threads(check_int("torch_threads", torch_threads))
    return out


def _warm_started(model: Any, config: Any, family: str, settings: EpisodeSettings,
                  dev: list[int], d: int, n: int, flatten: bool, seed: int,
                  warm_start_edits: bool, options: dict[str, Any] | None,
                  evaluate: Callable[[Policy], list[EpisodeResult]],
                  say: Callable[[str], None]) -> tuple[dict[str, Any], list[EpisodeResult]]:
    """The warm start (when asked): the policy fitted to the rewards of every one-step edit
    on the dev instances, then evaluated; what it did and those results."""
    warm: dict[str, Any] = {"used": bool(warm_start_edits), "steps": 0, "seconds": 0.0}
    if not warm_start_edits:
        return warm, []
    say(f"warm start: every one-step edit on {len(dev)} dev instances")
    probes = probe_edits(family, settings, dev, d, n)
    started = time.perf_counter()
    fit = warm_start(model.policy, probes, flatten, seed=seed, **(options or {}))
    warm.update(fit, steps=probes.steps, seconds=probes.seconds + time.perf_counter() - started)
    return warm, evaluate(RLPolicy(model, config, seed=seed))


def _warm_start_wanted(warm_start_edits: bool | None, architecture: str) -> bool:
    """Whether to warm-start from every one-step edit (by default: the pairwise network)."""
    if warm_start_edits is None:
        return architecture == "pairwise"
    if warm_start_edits and architecture != "pairwise":
        raise HeuresisError("warm_start_edits needs architecture='pairwise' (the warm start "
                            "writes the shared pair head)")
    return bool(warm_start_edits)


def _evidence(family: str, dev: list[int], test: list[int], test_split: str, d: int, n: int,
              workers: int | None, salt: str | None, say: Callable[[str], None],
              show: bool) -> float:
    """Compute every instance's evidence first (``workers`` processes; by default one per
    CPU), so that training time excludes it; its seconds."""
    workers = available_cpus() if workers is None else workers
    instances = len(expand_families(family)) * (len(dev) + len(test))
    say(f"evidence for {len(dev)} dev and {len(test)} {test_split} instances of {family} "
        f"(d={d}, n={n}) in {workers} worker process(es)")
    with Progress(instances, "evidence", unit="instance", say=say, show=show) as shown:
        splits = ({"dev": dev, "test": test} if test_split == "test"
                  else {"dev": [*dev, *test]})
        return warm_evidence(family, splits, d, n, workers, salt=salt,
                             progress=lambda *_: shown.update())


def _freeze_encoder(model: Any, freeze_encoder: bool | None, warm_started: bool) -> bool:
    """Freeze the feature extractor (by default after a warm start); whether it was."""
    if freeze_encoder is None:
        freeze_encoder = warm_started
    if freeze_encoder:
        for parameter in model.policy.features_extractor.parameters():
            parameter.requires_grad_(False)
    return bool(freeze_encoder)


def _learn(model: Any, params: dict[str, Any], steps: int, say: Callable[[str], None],
           show: bool) -> tuple[LearningCurveCallback, float, float]:
    """PPO for ``steps`` steps with the entropy schedule: the learning curve, wall and CPU
    seconds."""
    callback = LearningCurveCallback()
    schedule = EntropySchedule(params["ent_coef"], params["ent_coef_final"], steps)
    shown = TrainingProgress(steps, say, callback, show_bar=show)
    started, cpu_started = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=steps, callback=[callback, schedule, shown])
    return callback, time.perf_counter() - started, time.process_time() - cpu_started


def _split_indices(dev_count: int | Sequence[int], test_count: int | Sequence[int],
                   test_split: str) -> tuple[list[int], list[int]]:
    """The training (dev) and evaluation indices, disjoint when both are dev instances."""
    check_choice("test_split", test_split, ("test", "dev"))
    dev = _indices("dev_count", dev_count, "dev")
    test = _indices("test_count", test_count, test_split)
    if test_split == "dev" and set(dev) & set(test):
        raise HeuresisError(f"the held-out dev instances overlap the training ones: "
                            f"{sorted(set(dev) & set(test))[:10]}; give disjoint indices")
    return dev, test


def _hyperparameters(warm_start_edits: bool, given: dict[str, Any] | None,
                     n_envs: int) -> dict[str, Any]:
    """The defaults (with or without a warm start) updated by ``given``, the batch no larger
    than a rollout."""
    params = dict(DEFAULT_HYPERPARAMETERS if warm_start_edits else SCRATCH_HYPERPARAMETERS)
    unknown = sorted(set(given or {}) - set(params))
    if unknown:
        raise HeuresisError(f"unknown hyperparameter(s) {unknown}; known: {sorted(params)}")
    params.update(given or {})
    params["batch_size"] = min(int(params["batch_size"]), int(params["n_steps"]) * n_envs)
    return params


def _new_model(algo: str, architecture: str, env: Any, hidden: int, seed: int,
               params: dict[str, Any]) -> Any:
    """The untrained model of ``algo`` with the architecture's policy network."""
    if architecture == "pairwise":
        policy: Any = PairwiseMaskablePolicy if algo == "maskable_ppo" else PairwisePolicy
        policy_kwargs: dict[str, Any] = {"hidden": hidden}
    else:
        policy = "MultiInputPolicy" if algo == "maskable_ppo" else "MlpPolicy"
        policy_kwargs = {"net_arch": [hidden, hidden]}
    ppo_params = {k: v for k, v in params.items() if k != "ent_coef_final"}
    return algorithm_class(algo)(policy, env, seed=seed, device="cpu", verbose=0,
                                 policy_kwargs=policy_kwargs, **ppo_params)


@dataclass(frozen=True)
class _Gains:
    """Paired bootstrap intervals of F1 gains over the guided start's F1 on the same
    evaluation instances."""

    n_resamples: int
    seed: int
    start_f1: list[float]

    def over_start(self, f1: list[float], rows: slice = slice(None)) -> Any:
        return paired_bootstrap(f1[rows], self.start_f1[rows], n_resamples=self.n_resamples,
                                seed=self.seed)

    def per_family(self, families: Sequence[str], count: int,
                   f1: list[float]) -> dict[str, Any]:
        """Each family's F1s and gain (evaluate_policy ran the families in order, ``count``
        instances each); empty for one family."""
        if len(families) <= 1:
            return {}
        per_family = {}
        for k, name in enumerate(families):
            rows = slice(k * count, (k + 1) * count)
            per_family[name] = {"policy_f1": f1[rows], "start_f1": self.start_f1[rows],
                                "f1_difference": asdict(self.over_start(f1, rows))}
        return per_family


def _write_report(report: TrainingReport, curve: Any, difference: Any) -> None:
    """The learning curve's plot and the report's JSON in the output folder."""
    out = Path(report.out_dir)
    plot_learning_curve(curve, out / CURVE_FILE, test_gain=difference,
                        title=f"{report.algo} ({report.architecture}) on {report.family}, "
                              f"d={report.d}, n={report.n}: "
                              f"{'test' if report.test_split == 'test' else 'held-out dev'} "
                              f"ΔF1 {difference.mean:+.3f}")
    report.files = {"model": str(out / MODEL_FILE),
                    "model_description": str(out / DESCRIPTION_FILE),
                    "config": str(out / CONFIG_FILE),
                    "report": str(out / REPORT_FILE), "learning_curve": str(out / CURVE_FILE)}
    (out / REPORT_FILE).write_text(json.dumps(report.to_dict(), indent=2), encoding="utf-8")
