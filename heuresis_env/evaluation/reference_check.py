"""A reference run is re-derived, never trusted: its policy is run again on each of its
episodes' instances and must give the graph the run recorded.

A report measures every gain from its references — BCA_φ (``bca``), the ideal oracle
(``oracle``), PC-KCI (``pc-kci``, or ``guided-start``) — so a run that only *says* it is one
(an oracle's results relabelled ``bca``, a ``bca`` run with edited final graphs, consistent
with their edited scores) would move every Δʳ_φ and headroom of the report. Re-scoring
(:mod:`.integrity`) cannot see that: the graphs and scores agree; only the policy can say
which graph it submits.

:func:`rederive_reference` builds the registered policy the run names (an entry point of
``heuresis.policies`` or ``heuresis.references``: installed code, never the run's) with the
run's recorded options, plays every episode of the run again through the runner's own
:class:`~heuresis_env.evaluation.episode.EpisodeRunner` — the same environment, settings,
instance and seed, the truth handed to a reference that needs it — and compares each final
graph with the recorded one. The wall-time budget is lifted (a slower machine must not cut
what the run finished); algorithm outputs come from the disk cache keyed by the instance's
data hash (``cached_run_algorithm``), so a reference whose run was made on this machine
costs about one environment reset per episode.

A run that cannot be re-derived — a policy that is not registered (``module:attr``), a
sealed run read without its salt, an option the policy refuses, a graph that differs — is
not verified, and :class:`ReferenceCheck` says why in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation.episode import EpisodeRunner, EpisodeTask, RunSpec
from heuresis_env.evaluation.policies import (
    make_policy,
    make_reference,
    registered_policies,
    registered_references,
)
from heuresis_env.evaluation.run_format import (
    EpisodeRecord,
    RunDirectory,
    episode_seed,
    run_salt,
)
from heuresis_env.generation.salts import SealedSalt, sealing_salt
from heuresis_env.graphs import Graph, GraphError
from heuresis_env.policy import EpisodeSettings, Policy

#: the worker name of a re-derived episode (never written anywhere)
WORKER = "reference-check"


@dataclass(frozen=True)
class ReferenceCheck:
    """The outcome of :func:`rederive_reference` for one run."""

    path: Path
    policy: str
    #: every episode re-derived to the recorded graph
    verified: bool
    #: episodes re-derived (up to the first that failed)
    checked: int
    #: why the run is not verified, one line ("" when it is)
    reason: str = ""

    def text(self) -> str:
        """One line: verified with the count, or why not."""
        if self.verified:
            return (f"{self.path}: verified, {self.checked} episode(s) of policy "
                    f"{self.policy!r} re-derived from their instances")
        return f"{self.path}: unverified: {self.reason}"


def _refused(run: RunDirectory, checked: int, reason: str) -> ReferenceCheck:
    return ReferenceCheck(run.path, run.policy, False, checked, " ".join(reason.split()))


def _graph_difference(recorded: Graph, derived: Graph) -> str:
    """How two graphs over the same variables differ, e.g. ``3 of 10 pairs differ
    (X1 --> X2 recorded, X1 --- X2 re-derived; …)``."""
    if recorded.names != derived.names:
        return f"its variables {list(recorded.names)} are not {list(derived.names)}"
    marks_r, marks_d = np.asarray(recorded.marks), np.asarray(derived.marks)
    pairs = [(i, j) for i in range(len(recorded.names)) for j in range(i + 1, len(recorded.names))
             if marks_r[i, j] != marks_d[i, j] or marks_r[j, i] != marks_d[j, i]]

    def edge(graph: Graph, i: int, j: int) -> str:
        u, v = graph.names[i], graph.names[j]
        found = [str(e) for e in graph.edges() if {e.u, e.v} == {u, v}]
        return found[0] if found else f"no edge {u}–{v}"

    shown = "; ".join(f"{edge(recorded, i, j)} recorded, {edge(derived, i, j)} re-derived"
                      for i, j in pairs[:2])
    more = f"; {len(pairs) - 2} more" if len(pairs) > 2 else ""
    return f"{len(pairs)} pair(s) differ ({shown}{more})"


def _settings(run: RunDirectory) -> EpisodeSettings:
    """The run's settings with the wall-time budget lifted."""
    try:
        settings = EpisodeSettings(**run.settings)
    except TypeError as exc:
        raise HeuresisError(f"its settings are not episode settings ({exc})") from None
    # None: no wall budget (the environment and the runner read it so; the field is typed
    # for the budgets a run is given)
    return replace(settings, max_seconds=None)  # type: ignore[arg-type]


def _policy(run: RunDirectory) -> Policy:
    """The registered policy the run names, built here with its recorded options."""
    name = run.policy
    options = run.policy_options
    if name in registered_references():
        return make_reference(name, options)
    if name in registered_policies():
        return make_policy(name, options)
    raise HeuresisError(f"its policy {name!r} is not a registered policy or reference, so it "
                        "cannot be run again here")


def _salt(run: RunDirectory, salt: SealedSalt | str | None) -> SealedSalt | None:
    if not run.config.get("salt_digest"):
        return None
    given = None if salt is None else sealing_salt("test", salt)
    if given is not None and given.matches(str(run.config["salt_digest"])):
        return given
    try:
        found = run_salt(run)
    except HeuresisError:
        found = None
    if found is None:
        raise HeuresisError("it ran on a sealed split and $HEURESIS_TEST_SALT is not its salt "
                            "here, so its instances cannot be regenerated")
    return found


def rederive_reference(run: RunDirectory, salt: SealedSalt | str | None = None
                       ) -> ReferenceCheck:
    """Play every episode of ``run`` again with its registered policy and options and compare
    the final graphs (see the module docstring); never raises for a run it cannot verify."""
    if run.task != "graph":
        return _refused(run, 0, f"it is a {run.task!r} run, not a graph run")
    try:
        sealed = _salt(run, salt)
        settings = _settings(run)
        policy = _policy(run)
    except HeuresisError as exc:
        return _refused(run, 0, str(exc))
    except (TypeError, ValueError) as exc:  # options a factory cannot take
        return _refused(run, 0, f"policy {run.policy!r} cannot be built with its options "
                                f"({type(exc).__name__}: {exc})")
    config = run.config
    spec = RunSpec(policy=run.policy, policy_options=run.policy_options, settings=settings,
                   d=config.get("d"), n=config.get("n"), salt=sealed,
                   datasets=tuple(dict(t) for t in config.get("datasets") or ()),
                   reference=bool(config.get("reference")))
    checked = 0
    try:
        runner = EpisodeRunner(spec, WORKER, policy=policy)
    except HeuresisError as exc:
        return _refused(run, 0, f"policy {run.policy!r} cannot start here: {exc}")
    try:
        for episode in sorted(run.episodes, key=lambda e: (e.family, e.index, e.repeat)):
            problem = _rederive_episode(runner, episode)
            if problem:
                return _refused(run, checked, f"episode {episode.episode_id}: {problem}")
            checked += 1
    finally:
        runner.close()
    return ReferenceCheck(run.path, run.policy, True, checked)


def _rederive_episode(runner: EpisodeRunner, episode: EpisodeRecord) -> str:
    """Why the episode is not what the policy gives again ("" when it is)."""
    task = EpisodeTask(episode.episode_id, episode.family, episode.split, episode.index,
                       episode.repeat, episode_seed(episode.episode_id))
    try:
        record: Mapping[str, Any] = runner.run(task).record
    except HeuresisError as exc:
        return f"it cannot be played again ({exc})"
    if record["instance_sha256"] != episode.instance_sha256:
        return ("its instance regenerates with other data than the run recorded (another "
                "generator version or salt)")
    if record.get("error"):
        return f"playing it again failed: {str(record['error']).splitlines()[0]}"
    try:
        recorded = Graph.from_dict(dict(episode.final_graph or {}))
    except (GraphError, TypeError, ValueError) as exc:
        return f"its recorded final graph cannot be read ({exc})"
    derived = Graph.from_dict(dict(record["final_graph"]))
    if recorded == derived:
        return ""
    cut = (" (the run's episode was cut by the wall-time budget, so its graph is not the "
           "policy's)" if episode.termination_reason == "wall_time" else "")
    return (f"its final graph is not the one policy {runner.spec.policy!r} gives on its "
            f"instance: {_graph_difference(recorded, derived)}{cut}")


__all__ = ["ReferenceCheck", "rederive_reference"]
