"""Run directories for the report's tests, written in the run format (RUN_FORMAT.md) from
real episodes: scripted policies and the real reference policies (``bca``, ``pc-kci``,
``oracle``, which a report re-derives) drive the real environment on real instances, the env
writes real traces and scores, and this module writes config.json and results.jsonl.

The policies are importable (``tests.reports.report_fixtures:AgentPolicy``) so that
``heuresis evaluate`` can run them too.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.policy import EpisodeSettings, Policy

EDGE_PATTERN = re.compile(r"^(X\d+) (-->|---|<->|o->|o-o|<--|<-o) (X\d+)$", re.MULTILINE)


def parse_edges(text: str) -> list[tuple[str, str, str]]:
    """The edges an observation text lists (``X1 --> X2`` lines) as (u, mark, v)."""
    return [(u, mark, v) for u, mark, v in EDGE_PATTERN.findall(text)]


def _pair(u: str, v: str) -> tuple[str, str]:
    return (u, v) if int(u[1:]) < int(v[1:]) else (v, u)


def _action(tool: str, **args: Any) -> str:
    return json.dumps({"tool": tool, "args": args})


class ScriptedPolicy(Policy):
    """A text policy that plays a list of actions; subclasses build the list as it goes."""

    name = "scripted"

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        d = int(np.asarray(observation["working_graph"]).shape[0])
        self.names = [f"X{i + 1}" for i in range(d)]
        self.index = int(info["instance_index"])
        self.sha256 = str(info["sha256"])
        self.queue: list[str] = []
        self.outputs: dict[str, set[tuple[str, str]]] = {}
        self.stage = 0
        self.steps = 0

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        self.steps += 1
        if not self.queue:
            self.queue = self.plan(observation)
        return self.queue.pop(0)

    def plan(self, observation: Any) -> list[str]:
        raise NotImplementedError


class AlgorithmPolicy(ScriptedPolicy):
    """Submit one algorithm's output: run it, load it as the working graph, submit (the shape
    of the bca and pc-kci reference policies)."""

    name = "algorithm"

    def __init__(self, algorithm: str = "ges"):
        self.algorithm = algorithm

    def plan(self, observation: Any) -> list[str]:
        self.stage += 1
        if self.stage == 1:
            return [_action("run_algorithm", name=self.algorithm, save_as="out")]
        if self.stage == 2:
            return [_action("load_graph", name="out")]
        return [_action("submit")]


class AgentPolicy(ScriptedPolicy):
    """A small evidence-gathering agent with a known edge provenance.

    It runs PC-KCI, GES and PC-Fisher-z on the first three variables (a partial graph),
    starts from PC-KCI's output, adds up to two GES edges PC-KCI lacks and one edge that no
    output proposes, then submits. On the instance ``truncate_index`` it instead loads PC-KCI's
    output and keeps calling ``describe_data`` until the step budget ends the episode (a
    truncated episode scored on that working graph).
    """

    name = "agent"

    def __init__(self, truncate_index: int | None = None, tokens_per_step: int = 0,
                 cost_per_step: float = 0.0):
        self.truncate_index = truncate_index
        self.tokens_per_step = tokens_per_step
        self.cost_per_step = cost_per_step

    def plan(self, observation: Any) -> list[str]:
        self.stage += 1
        text = str(observation.get("text", ""))
        calls = [("kci", dict(name="pc-kci", save_as="kci")),
                 ("ges", dict(name="ges")),
                 ("partial", dict(name="pc-fisherz", variables=self.names[:3]))]
        if self.stage <= len(calls):
            if self.stage > 1:  # the previous call's output
                self.outputs[calls[self.stage - 2][0]] = {
                    _pair(u, v) for u, _, v in parse_edges(text)}
            return [_action("run_algorithm", **calls[self.stage - 1][1])]
        if self.stage == len(calls) + 1:
            self.outputs[calls[-1][0]] = {_pair(u, v) for u, _, v in parse_edges(text)}
            if self.index == self.truncate_index:
                return [_action("load_graph", name="kci")] + [_action("describe_data")] * 200
            kci = self.outputs["kci"]
            proposed = set().union(*self.outputs.values())
            from_ges = sorted(self.outputs["ges"] - kci)[:2]
            nowhere = [p for p in ((a, b) for i, a in enumerate(self.names)
                                   for b in self.names[i + 1:]) if p not in proposed][:1]
            actions = [_action("load_graph", name="kci")]
            actions += [_action("add_edge", x=u, y=v, directed=False) for u, v in from_ges]
            actions += [_action("add_edge", x=u, y=v, directed=False) for u, v in nowhere]
            return actions + [_action("submit")]
        return [_action("submit")]

    def usage(self) -> dict[str, Any]:
        if not self.tokens_per_step:
            return {}
        return {"prompt_tokens": 900 * self.steps, "completion_tokens": 100 * self.steps,
                "cost_usd": self.cost_per_step * self.steps, "api_retries": 0}


# ---- writing run directories ----------------------------------------------------------------------

def _append_line(path: Path, record: dict[str, Any]) -> None:
    """One result line with one os.write on an O_APPEND descriptor, then fsync."""
    line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _episode_seed(episode: str) -> int:
    return int.from_bytes(hashlib.sha256(f"heuresis-episode:{episode}".encode()).digest()[:4],
                          "big")


def write_config(path: Path, *, policy: str, settings: EpisodeSettings | dict[str, Any],
                 families: Sequence[str], count: int, repeats: int, d: int, n: int,
                 split: str = "dev", policy_options: dict[str, Any] | None = None,
                 instance_keys: Sequence[dict[str, Any]] | None = None) -> dict[str, Any]:
    """config.json in the run format (written atomically)."""
    from heuresis_env.generation.instances import InstanceKey

    if isinstance(settings, EpisodeSettings):
        settings = settings.to_dict()
    keys = instance_keys if instance_keys is not None else [
        InstanceKey(f, split, i, d=d, n=n).to_dict() for f in families for i in range(count)]
    config = {"format_version": 1, "policy": policy, "policy_options": policy_options or {},
              "settings": dict(settings), "split": split, "families": list(families),
              "count": count, "repeats": repeats, "d": d, "n": n,
              "instance_keys": sorted(keys, key=lambda k: (k["family"], k["split"], k["index"])),
              "salt_digest": None, "package_versions": {"heuresis": "0.1.0"},
              "code_version": "0.1.0 (fixture)", "created": "2026-01-01T00:00:00+0000"}
    path.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path, suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        json.dump(config, handle, indent=1)
    os.replace(temporary, path / "config.json")
    return config


def run_policy(path: str | os.PathLike, policy_name: str, make_policy, *,
               families: Sequence[str], count: int, settings: EpisodeSettings,
               repeats: int = 1, d: int = 5, n: int = 200,
               policy_options: dict[str, Any] | None = None) -> Path:
    """Run ``make_policy(family, repeat)``'s policy on every (family, index, repeat) with the
    real environment and write the run directory (config, results, traces)."""
    from heuresis_env.env.core import HeuresisEnv
    from heuresis_env.policy import run_episode

    path = Path(path)
    write_config(path, policy=policy_name, settings=settings, families=families, count=count,
                 repeats=repeats, d=d, n=n, policy_options=policy_options)
    (path / "traces").mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="traces-", dir=path))
    for family in families:
        for repeat in range(repeats):
            policy = make_policy(family, repeat)
            policy.configure(settings)
            for index in range(count):
                episode = f"{family}/dev/{index}/r{repeat}"
                env = HeuresisEnv(family=family, split="dev", d=d, n=n,
                                  guided=settings.guided, toolbox=settings.toolbox,
                                  target=settings.target, max_steps=settings.max_steps,
                                  max_seconds=settings.max_seconds, trace_path=str(scratch))
                try:
                    result = run_episode(env, policy, seed=_episode_seed(episode),
                                         options={"index": index})
                    final_graph = env.unwrapped.working_graph.to_dict()
                    trace_file = env.unwrapped.trace_file
                    sha = env.unwrapped.instance_sha256
                finally:
                    env.close()
                stem = episode.replace("/", "_")
                shutil.move(str(trace_file), path / "traces" / f"{stem}.jsonl")
                usage = result.usage
                tokens = ({"prompt": usage["prompt_tokens"],
                           "completion": usage["completion_tokens"]}
                          if "prompt_tokens" in usage else None)
                _append_line(path / "results.jsonl", {
                    "episode_id": episode, "policy": policy_name, "family": family,
                    "split": "dev", "index": index, "repeat": repeat, "instance_sha256": sha,
                    "scores": {k: (None if isinstance(v, float) and math.isnan(v) else v)
                               for k, v in result.scores.items()},
                    "steps": result.steps, "terminated": result.terminated,
                    "truncated": result.truncated, "finished": result.finished,
                    "termination_reason": result.termination_reason,
                    "wall_seconds": result.wall_seconds, "tokens": tokens,
                    "cost_usd": usage.get("cost_usd"), "api_retries": usage.get("api_retries"),
                    "final_graph": final_graph, "trace": f"traces/{stem}.jsonl",
                    "transcript": None, "error": None, "worker": "fixture"})
    shutil.rmtree(scratch, ignore_errors=True)
    return path


#: the budgets every fixture run shares
FIXTURE_SETTINGS = EpisodeSettings(max_steps=12, max_seconds=600.0)
FIXTURE_FAMILIES = ("lg", "anm")
FIXTURE_COUNT = 3
#: the fixture's BCA_φ (a selection file the real ``bca`` policy reads: selecting on the fly
#: would run every candidate algorithm on ten development instances)
BCA_BY_FAMILY = {"lg": "ges", "anm": "pc-kci"}
SELECTION_NAME = "bca_selection.json"


def reference_runs(root: str | os.PathLike, **common: Any) -> dict[str, Path]:
    """The three references as the report re-derives them: the real registered ``bca``
    (with the fixture's selection file, written into ``root``), ``pc-kci`` and ``oracle``
    policies, with their options recorded."""
    from heuresis_env.evaluation.policies import make_policy

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    selection = root / SELECTION_NAME
    selection.write_text(json.dumps({"bca": BCA_BY_FAMILY}))
    options: dict[str, dict[str, Any]] = {
        "bca": {"selection_path": str(selection)}, "pc-kci": {}, "oracle": {}}
    return {name: run_policy(root / name, name,
                             lambda f, r, name=name: make_policy(name, options[name]),
                             policy_options=options[name] or None, **common)
            for name in options}


def write_standard_runs(root: str | os.PathLike) -> dict[str, Path]:
    """The fixture set: the three references (real runs of the reference policies), an agent
    with two repeats (one truncated episode each), its guided and minimal-toolbox variants,
    and a priced "llm" agent."""
    from dataclasses import replace

    root = Path(root)
    common = dict(families=FIXTURE_FAMILIES, count=FIXTURE_COUNT, settings=FIXTURE_SETTINGS)
    runs = {
        **reference_runs(root, **common),
        "agent": run_policy(root / "agent", "agent",
                            lambda f, r: AgentPolicy(truncate_index=r), repeats=2, **common),
        "agent-guided": run_policy(root / "agent-guided", "agent",
                                   lambda f, r: AgentPolicy(truncate_index=2),
                                   families=FIXTURE_FAMILIES, count=FIXTURE_COUNT,
                                   settings=replace(FIXTURE_SETTINGS, guided=True)),
        "agent-minimal": run_policy(root / "agent-minimal", "agent",
                                    lambda f, r: AgentPolicy(truncate_index=2),
                                    families=FIXTURE_FAMILIES, count=FIXTURE_COUNT,
                                    settings=replace(FIXTURE_SETTINGS, toolbox="minimal")),
        "llm": run_policy(root / "llm", "llm-sim",
                          lambda f, r: AgentPolicy(truncate_index=None, tokens_per_step=1000,
                                                   cost_per_step=0.002),
                          policy_options={"model": "scripted"}, **common),
    }
    return runs


# ---- synthetic runs (no environment): scores with a known distribution ------------------------

def write_synthetic_run(path: str | os.PathLike, policy: str, f1: Iterable[float], *,
                        family: str = "lg", truncated: Iterable[bool] | None = None,
                        settings: EpisodeSettings = FIXTURE_SETTINGS, d: int = 10,
                        n: int = 600, sha_prefix: str = "synthetic",
                        errors: Iterable[str | None] | None = None) -> Path:
    """A run directory whose episode i on instance ``family/dev/i`` has adjacency F1
    ``f1[i]`` (other scores derived) and error ``errors[i]``, for testing the statistics end
    to end."""
    from heuresis_env.generation.instances import InstanceKey

    path = Path(path)
    values = [float(v) for v in f1]
    flags = list(truncated) if truncated is not None else [False] * len(values)
    keys = [InstanceKey(family, "dev", i, d=d, n=n).to_dict() for i in range(len(values))]
    write_config(path, policy=policy, settings=settings, families=[family], count=len(values),
                 repeats=1, d=d, n=n, instance_keys=keys)
    reasons = list(errors) if errors is not None else [None] * len(values)
    lines = []
    for index, (value, cut, error) in enumerate(zip(values, flags, reasons, strict=True)):
        sha = hashlib.sha256(f"{sha_prefix}:{family}:{index}".encode()).hexdigest()
        lines.append(json.dumps({
            "episode_id": f"{family}/dev/{index}/r0", "policy": policy, "family": family,
            "split": "dev", "index": index, "repeat": 0, "instance_sha256": sha,
            "scores": {"f1": value, "precision": value, "recall": value,
                       "shd": round((1 - value) * d), "nshd": round((1 - value) * d) / d,
                       "shd_cpdag": round((1 - value) * d), "n_edges": d},
            "steps": 5, "terminated": not cut, "truncated": bool(cut), "finished": not cut,
            "termination_reason": "step_budget" if cut else "submitted", "wall_seconds": 0.1,
            "tokens": None, "cost_usd": None, "api_retries": None, "final_graph": None,
            "trace": None, "transcript": None, "error": error, "worker": "synthetic"}))
    (path / "results.jsonl").write_text("\n".join(lines) + "\n")
    return path
