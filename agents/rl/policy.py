"""Repair policies as :class:`~heuresis_env.policy.Policy` objects: a trained model acting on
the RL view with the masks applied (:class:`RLPolicy`, entry point ``rl`` via :func:`load`),
the guided start submitted unchanged (:class:`SubmitStartPolicy`, entry point
``guided-start``), and saving and loading a trained model with its config (the network in
the no-pickle format of :mod:`agents.rl.model_files`: ``model.npz`` + ``model.json``)."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agents.checks import check_choice
from agents.rl.model_files import DESCRIPTION_FILE, WEIGHTS_FILE, read_model, write_model
from agents.rl.spaces import FLAT_KEYS, ActionMasker, uses_orientations
from heuresis_env.cache import RecordLog, cache_root
from heuresis_env.env import LAYOUT_KEYS, RL_OBSERVATION_LAYOUT, RL_OPERATIONS, rl_action_table
from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import package_versions
from heuresis_env.evidence import EVIDENCE_VERSION, FEATURE_NAMES, REPAIR_FEATURE_NAMES
from heuresis_env.policy import EpisodeSettings, Policy

__all__ = [
    "ALGORITHMS",
    "ARCHITECTURES",
    "CONFIG_FILE",
    "MODEL_FILE",
    "DEFAULT_MODEL",
    "SHIPPED_MODELS",
    "SHIPPED_MODEL_DIR",
    "RLPolicy",
    "SubmitStartPolicy",
    "algorithm_class",
    "load",
    "policy_config",
    "save",
]

#: training algorithms: sb3-contrib's MaskablePPO, or SB3's PPO on the flattened observation
ALGORITHMS = ("maskable_ppo", "ppo")
#: policy networks: one encoder shared by all pairs, or SB3's default MLP on the flat input
ARCHITECTURES = ("pairwise", "mlp")
#: the weights (the network's description, ``model.json``, lies beside them)
MODEL_FILE = WEIGHTS_FILE
#: what stable-baselines3 saves: it unpickles parts of itself when loaded, so never read here
SB3_ARCHIVE = "model.zip"
#: the packages that compute a model's logits: their versions are part of the logits cache's key
NETWORK_PACKAGES = ("torch", "stable-baselines3", "sb3-contrib")
CONFIG_FILE = "policy.json"
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
#: the repair policies shipped with the package, by name (each directory's ``report.json`` and
#: ``README.md`` record the command that trained it): ``all``, the all-family policy on the
#: repair table (observation layout 2) — the default; one per benchmark family (layout 2,
#: trained on that family's development instances only); ``wild-layout1``, the first shipped
#: policy (layout 1, no repair table, trained on ``wild`` at n = 200)
SHIPPED_MODELS: dict[str, Path] = {
    "all": DATA_DIR / "rl_repair_all",
    **{family: DATA_DIR / "rl_repair_families" / family
       for family in ("lg", "anm", "hetero", "wild", "mixed", "gauntlet")},
    "wild-layout1": DATA_DIR / "rl_repair_wild",
}
#: the model :func:`load` returns without a path or a model name
DEFAULT_MODEL = "all"
SHIPPED_MODEL_DIR = SHIPPED_MODELS[DEFAULT_MODEL]


class SubmitStartPolicy(Policy):
    """Submits at once: in the guided condition its score is the guided start's (PC-KCI's)."""

    name = "guided-start"
    interface = "rl"

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        d = math.isqrt(int(np.asarray(observation["adjacency"]).size))
        return int(rl_action_table(d)[-1].index)


class RLPolicy(Policy):
    """A trained (Maskable)PPO model acting on the RL view, masks applied.

    It sees only what the runner gives a policy (observation and info) and recomputes the
    environment's action mask from the observation and the pairs it has tested
    (:class:`ActionMasker`), so it never takes an invalid action, under either algorithm; as
    in training it does not orient under ``target="none"`` and never undoes its own edit.
    ``deterministic`` picks the most probable valid action; otherwise actions are drawn from
    the masked distribution with a generator seeded by ``seed`` (reset per episode).
    """

    interface = "rl"

    def __init__(self, model: Any, config: dict[str, Any], deterministic: bool = True,
                 seed: int = 0, name: str = "rl",
                 load_model: Callable[[], Any] | None = None, model_file: Path | None = None):
        if (model is None) == (load_model is None):
            raise HeuresisError("an RLPolicy takes a model or a function that loads one")
        self._model = model
        #: the trained model's file, when loaded from one: its hash keys the logits cache
        self.model_file = None if model_file is None else Path(model_file)
        self._logits_log: RecordLog | None = None
        self._logits: dict[str, str] = {}
        #: loads the model when it is first needed (``configure`` or an action), so building
        #: the policy to read its size, as ``heuresis demo`` does, imports no torch
        self._load_model = load_model
        self.config = dict(config)
        self.name = name
        self.d = int(config["d"])
        self.flatten = bool(config["flatten"])
        #: the observation layout the model was trained on (1 when policy.json predates it)
        self.layout = int(config.get("observation_layout", 1))
        self.deterministic = bool(deterministic)
        self.seed = int(seed)
        self.settings = EpisodeSettings(max_steps=int(config.get("max_steps", 50)),
                                        guided=bool(config.get("guided", True)),
                                        target=str(config.get("target", "none")))
        self._masker = ActionMasker(self.d, self.settings.target,
                                    uses_orientations(self.settings.target))
        self._tested = np.zeros(self._masker.pair_i.size, dtype=bool)
        self._edited = np.zeros(self._masker.pair_i.size, dtype=bool)
        self._counts: dict[str, int] = {}
        self._episode = 0
        self._rng = np.random.default_rng(self.seed)

    @property
    def model(self) -> Any:
        if self._model is None:
            assert self._load_model is not None  # __init__ takes one or the other
            self._model = self._load_model()
        return self._model

    def configure(self, settings: EpisodeSettings) -> None:
        if self.model_file is not None and self._logits_log is None:
            digest = hashlib.sha256(self.model_file.read_bytes())
            digest.update((self.model_file.parent / DESCRIPTION_FILE).read_bytes())
            versions = package_versions()  # another torch may round the logits differently
            digest.update(repr([versions.get(name) for name in NETWORK_PACKAGES]).encode())
            self._logits_log = RecordLog(cache_root() / "rl_logits"
                                         / f"{digest.hexdigest()[:32]}.jsonl")
            self._logits = self._logits_log.load()
        if not self._logits:
            # a model that cannot load fails the run's start, not an episode (with logits
            # cached from an earlier run the model loads on the first input not cached)
            self.model  # noqa: B018
        super().configure(settings)
        self._masker = ActionMasker(self.d, settings.target, uses_orientations(settings.target))

    def notes(self) -> list[str]:
        """A run in another condition than the one the model was trained in is legal, and
        scores far lower (unguided, the policy edits an empty graph instead of PC-KCI's
        output): said in the run's summary and report."""
        trained = bool(self.config.get("guided", True))
        if bool(self.settings.guided) == trained:
            return []
        if trained:
            return [f"the RL policy {self.name!r} was trained in the guided condition (it edits "
                    "PC-KCI's output); this run is unguided, so it starts from the empty graph "
                    "and scores far lower: run it with --guided"]
        return [f"the RL policy {self.name!r} was trained unguided; this run is guided"]

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        size = int(np.asarray(observation["adjacency"]).size)
        if size != self.d * self.d:
            raise HeuresisError(f"this RL policy was trained on d = {self.d} variables; the "
                                f"episode has d = {math.isqrt(size)}")
        self._tested = np.zeros(self._masker.pair_i.size, dtype=bool)
        self._edited = np.zeros(self._masker.pair_i.size, dtype=bool)
        self._counts = {operation: 0 for operation in RL_OPERATIONS}
        self._rng = np.random.default_rng([self.seed, self._episode])
        self._episode += 1

    def action_masks(self, observation: dict[str, Any]) -> np.ndarray:
        """The actions this policy may take now: the environment's ``action_masks()``
        (recomputed from the observation), without orientations under ``target="none"`` and
        without undoing an edit made earlier in the episode (as in training)."""
        return self._masker.without_edits(self._masker(observation["adjacency"], self._tested),
                                          self._edited)

    def model_logits(self, observation: dict[str, Any]) -> np.ndarray:
        """The model's action logits for an observation (before the masks).

        A deterministic function of the model file and the model's input, so a policy loaded
        from a file keeps them in its own disk cache (``rl_logits/<model hash>.jsonl`` under
        the policy process's cache folder; the hash covers the weights, their description and the versions of torch,
        stable-baselines3 and sb3-contrib) keyed by a hash of the input: a rerun on the same
        instances reads them back, bit for bit, without importing torch or loading the model.
        """
        if self.flatten:
            model_input: Any = np.concatenate([np.asarray(observation[key], dtype=np.float32)
                                               .reshape(-1) for key in FLAT_KEYS[self.layout]])
            parts = [("flat", model_input)]
        else:  # a model of an older layout reads the keys it knows (unchanged since)
            model_input = {key: observation[key] for key in LAYOUT_KEYS[self.layout]}
            parts = sorted(model_input.items())
        key = None
        if self._logits_log is not None:
            digest = hashlib.sha256(str(self.layout).encode())
            for name, value in parts:
                array = np.ascontiguousarray(value)
                digest.update(f"|{name}|{array.dtype.str}|{array.shape}|".encode())
                digest.update(array.tobytes())
            key = digest.hexdigest()
            cached = self._logits.get(key)
            if cached is not None:
                return np.frombuffer(base64.b64decode(cached), dtype=np.float32).copy()
        import torch

        policy = self.model.policy
        policy.set_training_mode(False)
        tensor, _ = policy.obs_to_tensor(model_input)
        with torch.no_grad():
            logits = policy.get_distribution(tensor).distribution.logits[0].cpu().numpy()
        logits = np.asarray(logits, dtype=np.float32)
        if self._logits_log is not None and key is not None:
            encoded = base64.b64encode(logits.tobytes()).decode("ascii")
            self._logits_log.append(key, encoded)
            self._logits[key] = encoded
        return logits

    def action_probabilities(self, observation: dict[str, Any]) -> np.ndarray:
        """The model's action distribution restricted to the valid actions."""
        logits = self.model_logits(observation)
        mask = self.action_masks(observation)
        logits = np.where(mask, logits.astype(np.float64), -np.inf)
        logits -= logits.max()
        weights = np.exp(logits)
        return weights / weights.sum()

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        if not self._counts:
            self.reset(observation, info)
        probabilities = self.action_probabilities(observation)
        if self.deterministic:
            action = int(np.argmax(probabilities))
        else:
            action = int(self._rng.choice(probabilities.size, p=probabilities))
        operation, row = self._masker.operation(action)
        if operation == "test":
            self._tested[row] = True
        elif operation in ("add", "remove"):
            self._edited[row] = True
        self._counts[operation] += 1
        return action

    def usage(self) -> dict[str, Any]:
        return {"actions": dict(self._counts)}


def policy_config(algo: str, architecture: str, family: str, d: int, n: int,
                  settings: EpisodeSettings, **extra: Any) -> dict[str, Any]:
    """What :func:`load` needs beside the model: algorithm, sizes, condition, layout."""
    check_choice("RL algorithm", algo, ALGORITHMS)
    check_choice("architecture", architecture, ARCHITECTURES)
    return {"algo": algo, "architecture": architecture, "family": family, "d": int(d),
            "n": int(n), "guided": settings.guided, "target": settings.target,
            "max_steps": settings.max_steps, "flatten": algo == "ppo",
            "feature_names": list(FEATURE_NAMES), "evidence_version": EVIDENCE_VERSION,
            "observation_layout": RL_OBSERVATION_LAYOUT,
            "repair_feature_names": list(REPAIR_FEATURE_NAMES),
            **extra}


def save(model: Any, config: dict[str, Any], out_dir: str | os.PathLike,
         provenance: dict[str, Any] | None = None) -> Path:
    """Write the network of an SB3 algorithm (``model.npz`` + ``model.json``, no pickle) and
    ``policy.json`` (the config :func:`load` reads) into out_dir."""
    out = Path(out_dir)
    write_model(model.policy, str(config["algo"]), str(config["architecture"]),
                dict(model.policy_kwargs), out, provenance)
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=2), encoding="utf-8")
    return out


def algorithm_class(algo: str) -> type:
    check_choice("RL algorithm", algo, ALGORITHMS)
    if algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    from stable_baselines3 import PPO

    return PPO


def load(path: str | os.PathLike | None = None, deterministic: bool = True, seed: int = 0,
         device: str = "cpu", model: str | None = None) -> RLPolicy:
    """A trained policy from a training directory (or its ``model.npz``); the ``rl`` factory.

    ``model`` names a shipped policy instead (:data:`SHIPPED_MODELS`: ``all``, a family name,
    ``wild-layout1``); without either, the all-family policy in ``agents/data/rl_repair_all``
    (:data:`SHIPPED_MODEL_DIR`). The network is rebuilt from code and its weights read as
    plain arrays (:mod:`agents.rl.model_files`); a stable-baselines3 ``model.zip``, which
    unpickles when loaded, is refused."""
    if path is not None and model is not None:
        raise HeuresisError("give the RL policy a path or a shipped model name, not both "
                            f"(path={str(path)!r}, model={model!r})")
    if path is None:
        name = DEFAULT_MODEL if model is None else str(model)
        check_choice("shipped RL model", name, tuple(SHIPPED_MODELS))
        path = SHIPPED_MODELS[name]
    path = Path(path)
    directory = path if path.is_dir() or not path.suffix else path.parent
    if path.suffix == ".zip" or (not (directory / MODEL_FILE).exists()
                                 and (directory / SB3_ARCHIVE).exists()):
        zip_file = path if path.suffix == ".zip" else directory / SB3_ARCHIVE
        raise HeuresisError(f"{zip_file} is a stable-baselines3 archive, which runs code "
                            "from its pickled parts when loaded, so heuresis never loads it; a "
                            f"model is {MODEL_FILE} + {DESCRIPTION_FILE} (written by "
                            "`heuresis train`). Convert a zip you trust, once, with `python "
                            "scripts/convert_models.py rl --trusted-sha256 HASH DIR` (HASH: "
                            "the zip's SHA-256, which you vouch for)")
    if path.suffix and path.name not in (MODEL_FILE, DESCRIPTION_FILE):
        raise HeuresisError(f"{path}: give the RL policy a model directory or its "
                            f"{MODEL_FILE}")
    model_file = directory / MODEL_FILE
    config_file = directory / CONFIG_FILE
    if not model_file.is_file():
        raise HeuresisError(f"no trained model at {model_file}; give the directory that "
                            f"`heuresis train --out DIR` wrote (it holds {MODEL_FILE}, "
                            f"{DESCRIPTION_FILE} and {CONFIG_FILE})")
    if not config_file.is_file():
        raise HeuresisError(f"{config_file} is missing; it records how the model was trained "
                            "(algorithm, d, observation layout) and is written beside "
                            f"{MODEL_FILE} by agents.rl.train")
    config = json.loads(config_file.read_text(encoding="utf-8"))
    layout = int(config.get("observation_layout", 1))
    if layout not in LAYOUT_KEYS or layout > RL_OBSERVATION_LAYOUT:
        raise HeuresisError(f"the model at {directory} was trained on RL observation layout "
                            f"{layout}; this version of the RL view reads layouts "
                            f"{sorted(LAYOUT_KEYS)} (current {RL_OBSERVATION_LAYOUT}); "
                            "upgrade heuresis or retrain it")
    if layout >= 2 and config.get("repair_feature_names") != list(REPAIR_FEATURE_NAMES):
        raise HeuresisError(f"the model at {directory} (observation layout {layout}) was "
                            f"trained on the repair features {config.get('repair_feature_names')}"
                            f"; this version has {list(REPAIR_FEATURE_NAMES)}; retrain it")
    if config.get("feature_names") != list(FEATURE_NAMES):
        raise HeuresisError(f"the model at {directory} was trained on the evidence features "
                            f"{config.get('feature_names')}; this version of the RL view has "
                            f"{list(FEATURE_NAMES)}; retrain it")
    algorithm = config["algo"]
    check_choice("RL algorithm", algorithm, ALGORITHMS)

    def load_network() -> Any:
        loaded = read_model(directory, device=device)
        described = (loaded.description["algo"], loaded.description["architecture"])
        if described != (algorithm, config.get("architecture", "pairwise")):
            raise HeuresisError(f"{directory / DESCRIPTION_FILE} describes a {described} "
                                f"network; {config_file} a {algorithm} "
                                f"{config.get('architecture')} one")
        return loaded

    return RLPolicy(None, config, deterministic=deterministic, seed=seed,
                    load_model=load_network, model_file=model_file)
