"""``rl-int``: a MaskablePPO network choosing the next experiment's target, or to stop,
trained on a simulator of train-split instances.

The simulator (:class:`ExperimentSimulator`) replays what the real tools answered on each
training instance, computed once and kept on disk (:func:`collect`, resumable: one JSON file
an instance): PC-KCI's CPDAG on the observational rows (``run_algorithm``) and, for every
variable, which of the others responded to a randomized experiment of ``rows`` rows on it
(``intervene`` with KCI, through the tool itself on an episode state over the instance's
referee laboratory). An action intervenes on a variable (its edges are oriented from the
recorded responses, as :class:`~agents.experiments.policies.ExperimentPolicy` does) or
stops; the reward is the drop of the structural Hamming distance to the true DAG (/ 10) minus
``experiment_cost`` per experiment. The network is written as ``model.npz`` + ``model.json``
(:func:`agents.rl.write_model`, no pickle) beside ``policy.json`` and ``report.json``.

Rebuild the shipped model with ``heuresis train-int`` (see ``docs/experiments.md``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from agents.experiments.orienting import (
    NODE_FEATURES,
    Orientation,
    most_unresolved,
    node_features,
)
from agents.experiments.policies import ExperimentPolicy
from agents.rl import read_model, write_model
from heuresis_env.budgets import DEFAULT_EXPERIMENT_ROWS, DEFAULT_ROWS_PER_EXPERIMENT
from heuresis_env.discovery import cached_run_algorithm
from heuresis_env.env import EpisodeState, Regimes, get_tool
from heuresis_env.errors import HeuresisError
from heuresis_env.files import atomic_write_bytes
from heuresis_env.generation import InstanceKey, generate_instance, make_laboratory
from heuresis_env.graphs import Graph
from heuresis_env.metrics import shd
from heuresis_env.seeding import int31_seed

__all__ = ["DEFAULT_RL_INT_DIR", "ExperimentSimulator", "RLIntPolicy", "TrainingConfig",
           "collect", "load_rl_int", "train"]

#: the shipped model
DEFAULT_RL_INT_DIR = Path(__file__).resolve().parent.parent / "data" / "rl_int_wild"
POLICY_FILE = "policy.json"
REPORT_FILE = "report.json"
RECORD_VERSION = 1


@dataclass(frozen=True)
class TrainingConfig:
    """What a trained rl-int model was trained on and how (``policy.json``)."""

    families: tuple[str, ...] = ("wild",)
    count: int = 24
    first_index: int = 0
    d: int = 10
    n: int = 600
    rows: int = DEFAULT_ROWS_PER_EXPERIMENT
    experiments: int = DEFAULT_EXPERIMENT_ROWS // DEFAULT_ROWS_PER_EXPERIMENT
    start: str = "pc-kci"
    method: str = "kci"
    steps: int = 60_000
    seed: int = 0
    experiment_cost: float = 0.01
    net_arch: tuple[int, ...] = (64, 64)
    #: show each training episode's variables in a random order (see ExperimentSimulator)
    permute: bool = True


# ---- what the tools answered on the training instances ---------------------------------------

def _record_path(work_dir: Path, key: InstanceKey, config: TrainingConfig) -> Path:
    return work_dir / (f"{key.family}-{key.split}-{key.index:06d}-d{key.size[0]}-"
                       f"n{key.size[1]}-{config.start}-{config.method}-r{config.rows}.json")


def instance_record(key: InstanceKey, config: TrainingConfig) -> dict[str, Any]:
    """PC-KCI's CPDAG, every variable's experiment responses and the true DAG of one train
    instance, through the tools an episode would call."""
    instance = generate_instance(key)
    names = instance.names
    start = cached_run_algorithm(config.start, instance.X, names, instance.sha256,
                                 seed=int31_seed(instance.sha256))
    if not start.ok or start.graph is None:
        raise HeuresisError(f"{config.start} failed on {key}: {start.error}")
    d = len(names)
    regimes = Regimes(instance.X, names, d * config.rows, make_laboratory(instance, None))
    state = EpisodeState(instance.X, names, instance.sha256, regimes=regimes)
    tool = get_tool("intervene")
    responded = np.zeros((d, d), dtype=bool)
    for target in range(d):
        state.call_number = target + 1
        args = tool.arguments(True).model_validate(
            {"target": names[target], "n": config.rows, "method": config.method})
        result = tool.run(state, args)
        for j, name in enumerate(names):
            responded[target, j] = bool(result.data["columns"][name].get("moved"))
    dag = instance.record.require_graph("training rl-int")
    return {"version": RECORD_VERSION, "key": key.to_dict(), "names": list(names),
            "start": start.full_graph(names).to_dict(), "responded": responded.tolist(),
            "dag": dag.to_dict()}


def collect(config: TrainingConfig, work_dir: str | Path, progress: bool = False
            ) -> list[dict[str, Any]]:
    """The records of the training instances, computed once each and kept in ``work_dir``
    (an interrupted collection resumes where it stopped)."""
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    records = []
    for family in config.families:
        for index in range(config.first_index, config.first_index + config.count):
            key = InstanceKey(family, "train", index, d=config.d, n=config.n)
            path = _record_path(work, key, config)
            if path.exists():
                record = json.loads(path.read_text(encoding="utf-8"))
            else:
                started = time.perf_counter()
                record = instance_record(key, config)
                atomic_write_bytes(path, json.dumps(record).encode("utf-8"))
                if progress:
                    print(f"collected {key} in {time.perf_counter() - started:.1f} s",
                          flush=True)
            records.append(record)
    return records


# ---- the simulator --------------------------------------------------------------------------------

def observation_of(orientation: Orientation, experiments_left: int, experiments: int
                   ) -> dict[str, np.ndarray]:
    return {"nodes": node_features(orientation).reshape(-1),
            "budget": np.array([experiments_left / max(experiments, 1)], dtype=np.float32)}


def observation_space(d: int) -> spaces.Dict:
    return spaces.Dict({
        "nodes": spaces.Box(0.0, 1.0, (d * len(NODE_FEATURES),), np.float32),
        "budget": spaces.Box(0.0, 1.0, (1,), np.float32)})


class ExperimentSimulator(gym.Env):
    """Episodes over recorded instances: intervene on a variable (actions 0..d−1) or stop
    (action d); ``action_masks()`` for MaskablePPO.

    With ``permute`` each episode shows the variables in a fresh random order (action k is the
    k-th variable shown): column order carries no information in Heuresis, and a network that
    sees each instance under many orders learns a rule of the features, not of positions."""

    def __init__(self, records: Sequence[dict[str, Any]], experiments: int,
                 experiment_cost: float = 0.01, permute: bool = False):
        if not records:
            raise HeuresisError("the simulator needs at least one recorded instance")
        self.records = list(records)
        self.d = len(self.records[0]["names"])
        if any(len(r["names"]) != self.d for r in self.records):
            raise HeuresisError("every recorded instance must have the same d")
        self.experiments = int(experiments)
        self.experiment_cost = float(experiment_cost)
        self.permute = bool(permute)
        self._order = np.arange(self.d)
        self.observation_space = observation_space(self.d)
        self.action_space = spaces.Discrete(self.d + 1)
        self._graphs = [(Graph.from_dict(r["start"]), np.asarray(r["responded"], dtype=bool),
                         Graph.from_dict(r["dag"])) for r in self.records]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        index = (int(options["index"]) if options and "index" in options
                 else int(self.np_random.integers(len(self._graphs))))
        start, self._responded, self._dag = self._graphs[index]
        self._order = self.np_random.permutation(self.d) if self.permute else np.arange(self.d)
        self._orientation = Orientation(start)
        self._left = self.experiments
        self._shd = shd(start, self._dag)
        self.start_shd = self._shd
        return self._observe(), {}

    def _observe(self) -> dict[str, np.ndarray]:
        """The observation with the variables in this episode's order."""
        observation = observation_of(self._orientation, self._left, self.experiments)
        nodes = observation["nodes"].reshape(self.d, -1)[self._order]
        return {**observation, "nodes": nodes.reshape(-1)}

    def action_masks(self) -> np.ndarray:
        mask = np.ones(self.d + 1, dtype=bool)
        mask[: self.d] = self._left > 0
        return mask

    def step(self, action: int):
        action = int(action)
        if action == self.d or self._left <= 0:
            return self._observe(), 0.0, True, False, {"shd": self._shd}
        action = int(self._order[action])  # the variable shown at that position
        row = self._responded[action]
        self._orientation.record(action, {j: bool(row[j]) for j in range(self.d)
                                          if j != action})
        self._left -= 1
        new = shd(self._orientation.graph(), self._dag)
        reward = (self._shd - new) / 10.0 - self.experiment_cost
        self._shd = new
        done = self._left == 0
        return self._observe(), float(reward), done, False, {"shd": self._shd}


def _simulate(records: Sequence[dict[str, Any]], config: TrainingConfig, choose) -> list[int]:
    """The final SHD of each record under a target rule ``choose(orientation, rng)``."""
    env = ExperimentSimulator(records, config.experiments, config.experiment_cost)
    rng = np.random.default_rng(config.seed)
    out = []
    for index in range(len(records)):
        observation, _ = env.reset(options={"index": index})
        done = False
        info: dict[str, Any] = {"shd": env.start_shd}
        while not done:
            target = choose(env, observation, rng)
            observation, _, done, _, info = env.step(env.d if target is None else target)
        out.append(int(info["shd"]))
    return out


# ---- training --------------------------------------------------------------------------------

def train(config: TrainingConfig, out_dir: str | Path, work_dir: str | Path,
          dev_count: int = 16, progress: bool = True) -> dict[str, Any]:
    """Collect (or read) the training records, train MaskablePPO on the simulator, compare it
    on dev-split-like held-out train instances with random and most-unresolved targets, and
    write the model, ``policy.json`` and ``report.json`` into ``out_dir``."""
    import torch
    from sb3_contrib import MaskablePPO

    torch.set_num_threads(1)
    records = collect(config, work_dir, progress)
    held_out = TrainingConfig(**{**asdict(config), "first_index": config.first_index
                                 + config.count, "count": dev_count})
    held_out_records = collect(held_out, work_dir, progress)
    env = ExperimentSimulator(records, config.experiments, config.experiment_cost,
                              permute=config.permute)
    started = time.perf_counter()
    model = MaskablePPO("MultiInputPolicy", env, seed=config.seed, n_steps=512,
                        batch_size=128, learning_rate=3e-4, gamma=1.0, ent_coef=0.01,
                        policy_kwargs={"net_arch": list(config.net_arch)}, verbose=0)
    model.learn(config.steps)
    seconds = time.perf_counter() - started

    def network(env, observation, rng):
        action, _ = model.predict(observation, action_masks=env.action_masks(),
                                  deterministic=True)
        return None if int(action) == env.d else int(action)

    def random_targets(env, observation, rng):
        return int(rng.integers(env.d))

    def unresolved(env, observation, rng):
        target = most_unresolved(env._orientation)
        return None if target is None else int(np.flatnonzero(env._order == target)[0])

    report = {"config": asdict(config), "training_seconds": seconds,
              "held_out": {"first_index": held_out.first_index, "count": dev_count}}
    for name, rule in (("rl-int", network), ("random", random_targets),
                       ("most-unresolved", unresolved)):
        report[name] = {"train_shd": float(np.mean(_simulate(records, config, rule))),
                        "held_out_shd": _simulate(held_out_records, config, rule)}
        report[name]["held_out_mean_shd"] = float(np.mean(report[name]["held_out_shd"]))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_model(model.policy, "maskable_ppo", "mlp", {"net_arch": list(config.net_arch)}, out,
                provenance={"trained_on": "train split", "families": list(config.families),
                            "count": config.count, "steps": config.steps})
    (out / POLICY_FILE).write_text(json.dumps(asdict(config), indent=2), encoding="utf-8")
    (out / REPORT_FILE).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


# ---- the deployed policy ----------------------------------------------------------------------

class RLIntPolicy(ExperimentPolicy):
    """``active-int``'s procedure with the trained network choosing each target or to stop."""

    name = "rl-int"

    def __init__(self, path: str | Path | None = None, deterministic: bool = True):
        directory = Path(path) if path is not None else DEFAULT_RL_INT_DIR
        try:
            config = json.loads((directory / POLICY_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise HeuresisError(f"{directory / POLICY_FILE} is missing: an rl-int model "
                                "directory holds model.npz, model.json and policy.json "
                                "(heuresis train-int writes them)") from None
        self.config = TrainingConfig(**{k: tuple(v) if isinstance(v, list) else v
                                        for k, v in config.items()})
        super().__init__(self.config.rows, self.config.start, self.config.method)
        self.model = read_model(directory)
        self.deterministic = bool(deterministic)

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        if len(self._names) != self.config.d:
            raise HeuresisError(f"this rl-int model was trained at d = {self.config.d}; the "
                                f"episode has d = {len(self._names)}")
        self._budget = max(self._experiments_left, 1)

    def choose(self, orientation: Orientation) -> int | None:
        import torch

        observation = observation_of(orientation, self._experiments_left, self._budget)
        mask = np.ones(self.config.d + 1, dtype=bool)
        with torch.no_grad():
            action, _ = self.model.policy.predict(observation, action_masks=mask,
                                                  deterministic=self.deterministic)
        action = int(np.asarray(action).reshape(-1)[0])
        return None if action == self.config.d else action


def load_rl_int(path: str | None = None, deterministic: bool = True) -> RLIntPolicy:
    """The ``rl-int`` entry point (``path``: a model directory; default the shipped one)."""
    return RLIntPolicy(path, deterministic)
