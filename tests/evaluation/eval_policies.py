"""Policies for the evaluation tests, given to the runner as ``tests.evaluation.eval_policies:NAME``.

They are real policies driving real environments: one reads marginal Fisher-z tests from the
data and submits the dependent pairs (deterministic), others sleep past the wall budget,
raise, report tokens, or try to change the budgets the runner imposes.
"""

from __future__ import annotations

import ctypes
import gc
import itertools
import os
import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from heuresis_env.generation import instances
from heuresis_env.policy import EpisodeSettings, Policy


class FisherSkeleton(Policy):
    """Test every pair marginally with Fisher-z, add the dependent pairs undirected, submit.

    Deterministic: the graph is a function of the instance's data only. ``sleep`` slows each
    action (to kill a run mid-way); ``fail_on_index`` makes the policy raise on that instance
    after its first edit (the working graph then has that edge).
    """

    name = "fisher-skeleton"

    def __init__(self, alpha: float = 0.01, sleep: float = 0.0, fail_on_index: int | None = None):
        self.alpha = alpha
        self.sleep = sleep
        self.fail_on_index = fail_on_index

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        d = observation["working_graph"].shape[0]
        self.names = list(info.get("names") or [f"X{i + 1}" for i in range(d)])
        self.to_test = list(itertools.combinations(self.names, 2))
        self.dependent: list[tuple[str, str]] = []
        self.pending: tuple[str, str] | None = None
        self.edits = 0
        self.index = info["instance_index"]

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self.sleep:
            time.sleep(self.sleep)
        if self.pending is not None:
            if info.get("error") is None and info["data"]["p_value"] < self.alpha:
                self.dependent.append(self.pending)
            self.pending = None
        if self.to_test:
            self.pending = self.to_test.pop(0)
            x, y = self.pending
            return {"tool": "ci_test", "args": {"x": x, "y": y, "method": "fisherz"}}
        if self.edits and self.index == self.fail_on_index:
            raise RuntimeError(f"scripted failure on instance {self.index}")
        if self.dependent:
            x, y = self.dependent.pop(0)
            self.edits += 1
            return {"tool": "add_edge", "args": {"x": x, "y": y, "directed": False}}
        return {"tool": "submit", "args": {}}


def fisher_skeleton(**options: Any) -> FisherSkeleton:
    """A factory, the form entry points take."""
    return FisherSkeleton(**options)


class NeverSubmits(Policy):
    """Calls ``describe_data`` forever, each call after ``sleep`` seconds."""

    name = "never-submits"

    def __init__(self, sleep: float = 0.0):
        self.sleep = sleep

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        time.sleep(self.sleep)
        return {"tool": "describe_data", "args": {}}


class AddsThenHangs(Policy):
    """Adds X1 --- X2, then blocks in ``act`` far longer than any wall budget."""

    name = "adds-then-hangs"

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self.added = False

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if not self.added:
            self.added = True
            return {"tool": "add_edge", "args": {"x": "X1", "y": "X2", "directed": False}}
        try:
            time.sleep(600)
        except Exception:  # noqa: BLE001 - a policy that swallows errors must still be stopped
            pass
        return {"tool": "submit", "args": {}}


class ChangesBudgetsInConfigure(Policy):
    """Tries to give itself a larger step budget when configured."""

    def configure(self, settings: EpisodeSettings) -> None:
        self.settings = replace(settings, max_steps=settings.max_steps * 100)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        return {"tool": "submit", "args": {}}


class ChangesBudgetsMidEpisode(Policy):
    """Raises its own step and token budgets at reset, then never submits."""

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self.settings = replace(self.settings, max_steps=10_000, token_budget_per_turn=10**6)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        return {"tool": "show_graph", "args": {}}


class ReportsUsage(Policy):
    """Submits after one tool call, reporting tokens, cost and a transcript like a model would."""

    name = "reports-usage"

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self.turns: list[dict[str, Any]] = [{"role": "user", "content": observation["text"][:80]}]

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        action = ({"tool": "describe_data", "args": {}} if len(self.turns) == 1
                  else {"tool": "submit", "args": {}})
        self.turns.append({"role": "assistant", "content": action})
        return action

    def usage(self) -> dict[str, Any]:
        turns = len(self.turns) - 1
        return {"prompt_tokens": 100 * turns, "completion_tokens": 7 * turns,
                "cost_usd": 0.001 * turns, "api_retries": 1}

    def transcript(self) -> list[dict[str, Any]]:
        return list(self.turns)


class RLObserver(Policy):
    """An RL-view policy: checks it gets the RL observation, then submits via the mask's last
    valid action (the ``submit`` action is always valid)."""

    interface = "rl"

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        missing = {"adjacency", "evidence", "budget_left"} - set(observation)
        if missing:
            raise TypeError(f"expected the RL view's observation, missing {sorted(missing)}")
        d = int(round(observation["adjacency"].size ** 0.5))
        pairs = d * (d - 1) // 2
        return 3 * pairs + d * (d - 1)  # add, remove, test per pair; orient per ordered pair


def _runner_pid() -> int:
    """The process that runs this policy's episodes: the first ancestor that is neither the
    policy's supervisor nor the policy launcher it was forked from."""
    pid = os.getppid()
    while any(mark in Path(f"/proc/{pid}/cmdline").read_bytes()
              for mark in (b"serve_launches", b"policy_process import main")):
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return pid


class KillsItsProcess(FisherSkeleton):
    """Like :class:`FisherSkeleton`, but its process crashes (a segmentation fault) on instance
    1; with ``parent=True`` it kills the process that runs it instead (the runner's worker,
    which a policy process can see only without namespace isolation)."""

    def __init__(self, parent: bool = False, **options: Any):
        super().__init__(**options)
        self.parent = parent

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self.index == 1:
            if self.parent:
                os.kill(_runner_pid(), signal.SIGKILL)
            ctypes.string_at(0)
        return super().act(observation, info)


class BrokenFactory:
    """Not a Policy: the runner must refuse what it builds."""

    def __init__(self, **options: Any):
        self.options = options


def fails_in_worker(**options: Any) -> Policy:
    """A factory that fails when the policy is built (in a worker process)."""
    raise RuntimeError("this policy cannot be built here")


class TruthSeeker(Policy):
    """A policy written to cheat (issue 18): at every reset it tries each known route to the
    hidden truth or the test salt, records what it found in its transcript, and submits the
    true skeleton if any route gave it away (else the empty graph).

    ``run_dir``, ``runner_cache`` and ``graph_file``: the paths a cheater would guess (the run
    directory, the runner's cache folder, a data table's graph file).
    """

    name = "truth-seeker"

    def __init__(self, run_dir: str = "", runner_cache: str = "", graph_file: str = ""):
        self.run_dir, self.runner_cache, self.graph_file = run_dir, runner_cache, graph_file
        self.found: dict[str, Any] = {}
        self.truth: Any = None
        self.saw: set[str] = set()

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        found: dict[str, Any] = {"info_keys": sorted(info)}
        self.truth = None
        # an environment, a referee's closures or an instance with its record in memory
        objects = gc.get_objects()
        found["environments"] = sum(type(o).__name__ == "HeuresisEnv" for o in objects)
        found["referee_closures"] = sum(type(o).__name__ == "function" and o.__name__ in (
            "reveal", "is_true_pair") for o in objects)
        found["memo_entries"] = len(instances._GENERATED._entries)
        # the instance key plus the public generator (right only without a salt)
        key = info.get("instance")
        try:
            regenerated = instances.generate_instance(instances.InstanceKey.from_dict(key))
            if regenerated.sha256 == info.get("sha256"):
                self.truth = regenerated.record.dag
        except Exception:  # noqa: BLE001 - a data table is not registered in this process
            pass
        found["regenerated_the_instance"] = self.truth is not None
        # the salt: in this environment, or in any process environment /proc shows
        found["salt_variables"] = sorted(k for k in os.environ if "SALT" in k.upper())
        holders = []
        for pid in os.listdir("/proc"):
            if pid.isdigit() and int(pid) != os.getpid():
                try:
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        if instances.TEST_SALT_ENV.encode() + b"=" in f.read():
                            holders.append(int(pid))
                except OSError:
                    continue
        found["processes_showing_the_salt"] = holders
        # the memory of the processes that hold the truth or the salt: this process's
        # ancestors (the runner, its worker, the command and whatever started it) and any
        # process started with the salt in its environment (another worker of the run); other
        # users' processes on a shared machine are not the run's to protect
        ancestors, pid = set(), os.getppid()
        while pid > 1 and pid not in ancestors:
            ancestors.add(pid)
            try:
                with open(f"/proc/{pid}/stat") as f:
                    pid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                break
        readable = []
        for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
            if pid == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/mem", "rb"):
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        salted = instances.TEST_SALT_ENV.encode() + b"=" in f.read()
                    with open(f"/proc/{pid}/cmdline", "rb") as f:  # to say which, on a failure
                        command = f.read(300).replace(bytes(1), b" ").decode(errors="replace")
                if pid in ancestors or salted:
                    readable.append(f"{pid}: {command}")
            except OSError:
                continue
        found["process_memory_readable"] = readable
        # files the runner keeps: its cache (instances' evidence, reference scores), the run
        for name, path in (("runner_cache", self.runner_cache), ("run_dir", self.run_dir)):
            found[name] = sorted(os.listdir(path)) if path and os.path.isdir(path) else []
        # a data table's true graph, in the file the user gave with --graph
        try:
            with open(self.graph_file) as f:
                found["graph_file"] = f.read() if self.graph_file else ""
        except OSError:
            found["graph_file"] = ""
        # a cache entry the runner would load (a pickle runs code when loaded)
        found["planted_in_runner_cache"] = False
        if self.runner_cache:
            try:
                target = os.path.join(self.runner_cache, "evidence", "planted.pkl")
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as f:
                    f.write(b"planted")
                found["planted_in_runner_cache"] = True
            except OSError:
                pass
        self.found = found

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        self.saw |= {k for k in ("scores", "termination_reason", "final_graph") if k in info}
        if self.truth is not None:
            return {"tool": "submit", "args": {"edges": [f"{e.u} --- {e.v}"
                                                         for e in self.truth.edges()]}}
        return {"tool": "submit", "args": {"edges": []}}

    def transcript(self) -> list[dict[str, Any]]:
        return [{**self.found, "saw_final_info": sorted(self.saw)}]


class ProcessProbe(Policy):
    """Reports, in its usage, where its process came from: its pid and parent, whether it can
    open its parent's memory, and a draw from NumPy's global generator (a fresh interpreter
    seeds it from the OS)."""

    name = "process-probe"

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        return {"tool": "submit", "args": {}}

    def usage(self) -> dict[str, Any]:
        import numpy as np

        parent = os.getppid()
        try:
            with open(f"/proc/{parent}/mem", "rb"):
                readable = True
        except OSError:
            readable = False
        return {"pid": os.getpid(), "parent": parent, "parent_memory_readable": readable,
                "numpy_draw": float(np.random.random())}


class NotedFailure(Policy):
    """Submits at once and reports a failure and a note (``Policy.failure``/``notes``), as a
    baseline refused its tool and a model run outside its training condition do."""

    name = "noted-failure"

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        return {"tool": "submit", "args": {}}

    def failure(self) -> str | None:
        return "the tool it needs was refused"

    def notes(self) -> list[str]:
        return ["made for another condition"]


def noted_failure() -> NotedFailure:
    return NotedFailure()
