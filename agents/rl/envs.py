"""The environments a repair policy trains and is evaluated on: the RL view built as the
evaluation runner builds it, with the training wrappers (masks narrowed to repair actions,
submit as a pass, a step cost, a flattened observation), and the instances' evidence computed
beforehand so that training time excludes it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from agents.checks import check_choice, check_int
from agents.rl.spaces import ActionMasker, uses_orientations
from heuresis_env.evaluation import environment_kwargs as runner_environment_kwargs
from heuresis_env.evaluation import make_environment
from heuresis_env.evidence import EvidenceProvider
from heuresis_env.generation import InstanceKey, expand_families, generate_instance
from heuresis_env.policy import EpisodeResult, EpisodeSettings, Policy, run_episode
from heuresis_env.threads import parallel_map, start_method

__all__ = [
    "FamilyMix",
    "RepairActionMask",
    "StepCost",
    "SubmitAsPass",
    "environment_kwargs",
    "evaluate_policy",
    "make_training_env",
    "warm_evidence",
]


class RepairActionMask(gym.Wrapper):
    """Narrows the environment's ``action_masks()`` to a repair policy's actions, for
    MaskablePPO during training: no orientations unless the target scores them, and no edit
    of a pair already edited in the episode (a repair never undoes itself, so a policy
    cannot cycle adding and removing the same edge until the budget runs out).
    """

    def __init__(self, env: gym.Env, orient: bool):
        super().__init__(env)
        self.orient = bool(orient)
        self._masker = ActionMasker(env.unwrapped.d, orient=orient)
        table = env.unwrapped.rl_actions
        self._allowed = np.array([orient or a.operation != "orient" for a in table])
        self._edited = np.zeros(self._masker.pair_i.size, dtype=bool)

    def reset(self, **kwargs):
        self._edited[:] = False
        return self.env.reset(**kwargs)

    def step(self, action):
        result = self.env.step(action)
        index = int(np.asarray(action).reshape(()))
        if not result[4].get("error") and 0 <= index < self._masker.n_actions:
            operation, row = self._masker.operation(index)
            if operation in ("add", "remove"):
                self._edited[row] = True
        return result

    def action_masks(self) -> np.ndarray:
        mask = self.env.unwrapped.action_masks() & self._allowed
        return self._masker.without_edits(mask, self._edited)


class StepCost(gym.RewardWrapper):
    """Subtract a constant from every step's reward, so that submitting beats idling."""

    def __init__(self, env: gym.Env, cost: float):
        super().__init__(env)
        self.cost = float(cost)

    def reward(self, reward: float) -> float:
        return float(reward) - self.cost


class SubmitAsPass(gym.Wrapper):
    """During training, turns ``submit`` into a pass: a step that changes nothing (sent to the
    environment as an out-of-range action, which the RL view answers with an error step), so
    every training episode runs its whole step budget.

    Early in training most edits lower F1, and a policy that may end the episode learns to
    submit at once before it has found the few edits that pay — after which it samples one
    decision per episode and stops learning. With submit as a pass, every step of the budget
    samples a decision. A policy that passes in some state would pass there again (only the
    budget changes), so submitting in that state at evaluation is the same behaviour.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._submit = int(env.unwrapped.rl_actions[-1].index)
        self._pass = int(env.unwrapped.action_space.n)  # out of range: an error step

    def step(self, action):
        if int(np.asarray(action).reshape(())) == self._submit:
            action = self._pass
        return self.env.step(action)


class FamilyMix(gym.Env):
    """One training environment over several families: each reset plays the next family of a
    seeded shuffle (every family once per round), so one policy learns all of them.

    The families' RL views share their spaces (same d, same observation layout); the mix
    forwards ``step`` and ``action_masks()`` to the family of the current episode.
    """

    def __init__(self, envs: dict[str, gym.Env], seed: int = 0):
        if not envs:
            raise ValueError("FamilyMix needs at least one family")
        self.envs = dict(envs)
        self.families = list(self.envs)
        first = self.envs[self.families[0]]
        self.observation_space, self.action_space = first.observation_space, first.action_space
        self.metadata = getattr(first, "metadata", {})
        self._rng = np.random.default_rng(seed)
        self._queue: list[str] = []
        self.family = self.families[0]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self._queue = []
        if not self._queue:
            self._queue = [self.families[k] for k in self._rng.permutation(len(self.families))]
        self.family = self._queue.pop(0)
        child_seed = int(self._rng.integers(2**31)) if seed is None else seed
        observation, info = self.envs[self.family].reset(seed=child_seed, options=options)
        return observation, {**info, "family": self.family}

    def step(self, action):
        return self.envs[self.family].step(action)

    def action_masks(self) -> np.ndarray:
        return self.envs[self.family].get_wrapper_attr("action_masks")()

    def close(self) -> None:
        for env in self.envs.values():
            env.close()


def environment_kwargs(settings: EpisodeSettings, split: str, d: int, n: int,
                       **extra: Any) -> dict[str, Any]:
    """Keyword arguments of an RL-view environment under the shared settings (the runner's,
    plus ``extra``: reward, indices, salt)."""
    return {**runner_environment_kwargs(settings, split, d, n, "rl"), **extra}


def _training_env_factory(families: Sequence[str], kwargs: dict[str, Any], flatten: bool,
                          step_cost: float, submit_as_pass: bool,
                          seed: int = 0) -> Callable[[], gym.Env]:
    def one(family: str) -> gym.Env:
        env: gym.Env = RepairActionMask(make_environment(family, kwargs),
                                        uses_orientations(kwargs["target"]))
        if submit_as_pass:
            env = SubmitAsPass(env)
        return env

    def build() -> gym.Env:
        env: gym.Env = (one(families[0]) if len(families) == 1 else
                        FamilyMix({family: one(family) for family in families}, seed))
        env = Monitor(env)
        if step_cost:
            env = StepCost(env, step_cost)
        if flatten:
            env = gym.wrappers.FlattenObservation(env)
        return env

    return build


def make_training_env(family: str, settings: EpisodeSettings, indices: Sequence[int], d: int,
                      n: int, n_envs: int = 1, flatten: bool = False, step_cost: float = 0.0,
                      seed: int = 0, vectorization: str = "dummy", split: str = "dev",
                      submit_as_pass: bool = True) -> VecEnv:
    """Vectorized RL-view environments with the shaped reward over ``indices`` of ``split``.

    ``family`` is a family or a group (``all``: the six benchmark families, mixed episode by
    episode by :class:`FamilyMix`). Each copy is ``Monitor``-wrapped (episode returns, that is F1 gains, for the learning
    curve), its mask narrowed to the repair actions (:class:`RepairActionMask`), submit made
    a pass (:class:`SubmitAsPass`, unless ``submit_as_pass=False``), optionally charged
    ``step_cost`` per step, and flattened to one ``Box`` (for PPO).
    """
    check_choice("vectorization", vectorization, ("dummy", "subproc"))
    kwargs = environment_kwargs(settings, split, d, n, reward="shaped",
                                indices=list(indices))
    families = expand_families(family)
    factories = [_training_env_factory(families, kwargs, flatten, step_cost, submit_as_pass,
                                       seed + k)
                 for k in range(check_int("n_envs", n_envs))]
    if vectorization == "subproc" and n_envs > 1:
        env = SubprocVecEnv(factories, start_method=start_method())
    else:
        env = DummyVecEnv(factories)
    env.seed(seed)
    return env


def _warm_one(job: tuple) -> tuple[str, int, float]:
    family, split, index, d, n, salt = job
    started = time.perf_counter()
    instance = generate_instance(InstanceKey(family, split, index, d=d, n=n), salt)
    EvidenceProvider(instance.X, instance.names, instance.sha256).warm()
    return split, index, time.perf_counter() - started


def _warm_name(job: tuple) -> str:
    family, split, index, d, n, _ = job  # not the salt
    return f"{family} {split} instance {index} (d = {d}, n = {n})"


def warm_evidence(family: str, splits: dict[str, Iterable[int]], d: int, n: int,
                  workers: int = 1, salt: str | None = None,
                  progress: Callable[[str, int, float], None] | None = None) -> float:
    """Compute (or load) the guided start and pair evidence of every instance named, so that
    training and evaluation start warm; ``workers`` processes share the work. Returns seconds.

    ``family`` is a family or a group (``all``); ``splits`` maps a split name to instance
    indices, e.g. ``{"dev": range(40)}``.
    """
    workers = check_int("workers", workers)
    jobs = [(name, split, int(index), d, n, salt if split == "test" else None)
            for name in expand_families(family)
            for split, indices in splits.items() for index in indices]
    started = time.perf_counter()
    # reported as each finishes, not in order: one slow instance holds no count back
    for result in parallel_map(_warm_one, jobs, workers, ordered=False, describe=_warm_name):
        if progress is not None:
            progress(*result)
    return time.perf_counter() - started


def evaluate_policy(policy: Policy, family: str, split: str, indices: Iterable[int],
                    settings: EpisodeSettings, d: int, n: int,
                    salt: str | None = None) -> list[EpisodeResult]:
    """Run ``policy`` once on each instance of ``split`` named by ``indices`` (of each family
    of a group such as ``all``, family by family)."""
    policy.configure(settings)
    indices = [int(index) for index in indices]
    results = []
    for name in expand_families(family):
        env = make_environment(name, environment_kwargs(settings, split, d, n, salt=salt))
        try:
            results += [run_episode(env, policy, seed=index, options={"index": index})
                        for index in indices]
        finally:
            env.close()
    return results
