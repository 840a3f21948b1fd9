"""Check that run directories belong in one report, group them into arms, match their episodes.

Run directories are read by :func:`heuresis_env.evaluation.run_format.load_run`. Runs become
**arms**: the runs of one policy with the same options and the same settings are merged into
one arm (a benchmark may be run one family at a time). Episodes are matched across arms by
instance — (family, split, index) — and every arm must agree on each instance's data hash.

Settings split in two:

- **budgets** (:data:`BUDGET_FIELDS`, and the instance size ``d``, ``n``) must be identical
  for every run in one report, unless ``allow_mixed``; the refusal names each differing field;
- **conditions** (:data:`CONDITION_FIELDS`: guided, toolbox, prompt level, target) may differ:
  runs that differ in a condition are separate arms, compared in Table 8.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heuresis_env.errors import HeuresisError, RunFormatError, UnknownNameError
from heuresis_env.evaluation.integrity import verify_run
from heuresis_env.evaluation.reference_check import ReferenceCheck, rederive_reference
from heuresis_env.evaluation.run_format import (
    EpisodeRecord,
    InstanceId,
    RunDirectory,
    connection_option,
    find_run_directories,
    load_run,
    run_salt,
)
from heuresis_env.generation.families import available_families

#: settings every run in one table must share (refused unless allow_mixed)
BUDGET_FIELDS = ("max_steps", "max_seconds", "token_budget_per_turn")
#: top-level config fields that must agree too: the instances' size
SIZE_FIELDS = ("d", "n")
#: settings that define experimental conditions (separate arms, compared in Table 8; the
#: experiment budget's arms are compared in the experiments section instead)
CONDITION_FIELDS = ("guided", "toolbox", "prompt_level", "target", "experiments")
#: the reference policies' fixed names
BCA, ORACLE, PC_KCI = "bca", "oracle", "pc-kci"
#: PC-KCI's output submitted unchanged in the guided condition (the RL package's
#: ``guided-start`` policy): the PC-KCI reference of a report without a ``pc-kci`` run
GUIDED_START = "guided-start"
REFERENCE_POLICIES = (BCA, ORACLE, PC_KCI, GUIDED_START)
#: what each reference stands for in the report (the messages about a refused one)
REFERENCE_ROLES = {BCA: "BCA_φ", ORACLE: "the ideal oracle", PC_KCI: "the PC-KCI reference",
                   GUIDED_START: "the PC-KCI reference"}
#: a run's ``attribution`` when its policy and model are only its files' claim (an imported log)
SELF_REPORTED = "self-reported"


def run_names(paths: Sequence[Path]) -> list[str]:
    """Short unique names of run directories: the folder name, with parents added until the
    names differ (the trace viewer's run names; the report's links use the same)."""
    parts = [Path(p).resolve().parts for p in paths]
    depth = 1
    while True:
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names) or depth >= max(len(p) for p in parts):
            return names
        depth += 1


def family_order(families: Iterable[str]) -> list[str]:
    """Families in the registry's table order (lg, anm, …), unknown ones after, sorted."""

    wanted = set(families)
    known = [f for f in available_families() if f in wanted]
    return known + sorted(wanted - set(known))


# ---- arms ---------------------------------------------------------------------------------------

def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@dataclass
class Arm:
    """The runs of one policy with the same options and settings, as one set of episodes."""

    policy: str
    policy_options: dict[str, Any]
    settings: dict[str, Any]
    size: dict[str, Any]
    runs: list[RunDirectory]
    episodes: dict[tuple[str, str, int, int], EpisodeRecord]
    label: str = ""
    _index: tuple[int, dict] | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> str:
        """What makes an arm: policy, options (not how to reach a model), settings, size."""
        options = {k: v for k, v in self.policy_options.items() if not connection_option(k)}
        return _canonical([self.policy, options, self.settings, self.size])

    @property
    def is_reference(self) -> bool:
        """A reference point (BCA_φ, PC-KCI, the oracle), or any run the runner marked as a
        reference that saw the truth: never among the competing policies."""
        return self.policy in REFERENCE_POLICIES or any(
            run.config.get("reference") for run in self.runs)

    def conditions(self) -> dict[str, Any]:
        return {k: self.settings.get(k) for k in CONDITION_FIELDS}

    def families(self) -> list[str]:
        return family_order({e.family for e in self.episodes.values()})

    def instances(self, family: str | None = None) -> list[InstanceId]:
        """The instances this arm has at least one episode on (of one family, or all)."""
        found = {e.instance for e in self.episodes.values()
                 if family is None or e.family == family}
        order = {f: k for k, f in enumerate(family_order({i[0] for i in found}))}
        return sorted(found, key=lambda i: (order[i[0]], i[1], i[2]))

    def episodes_of(self, family: str | None = None) -> list[EpisodeRecord]:
        chosen = [e for e in self.episodes.values() if family is None or e.family == family]
        return sorted(chosen, key=lambda e: (e.family, e.index, e.repeat))

    def instance_score(self, instance: InstanceId, score: str = "f1",
                       finished_only: bool = False) -> float:
        """Mean of ``score`` over this arm's repeats on one instance.

        With ``finished_only`` only the finished (submitted, not truncated) repeats count, and
        an instance with none is NaN — so a paired comparison drops it on both sides, the
        reporting rule's finished-only view. Errored episodes never count (their score says
        nothing of the policy's discovery). NaN when the arm has no usable episode there.
        """
        values = [e.score(score) for e in self._by_instance().get(instance, ())
                  if not e.error and (e.finished or not finished_only)]
        values = [v for v in values if not math.isnan(v)]
        return float(sum(values) / len(values)) if values else math.nan

    def _by_instance(self) -> dict[InstanceId, list[EpisodeRecord]]:
        """Episodes grouped by instance (built once; arms are not changed after loading)."""
        if self._index is None or self._index[0] != len(self.episodes):
            grouped: dict[InstanceId, list[EpisodeRecord]] = {}
            for episode in self.episodes.values():
                grouped.setdefault(episode.instance, []).append(episode)
            self._index = (len(self.episodes), grouped)
        return self._index[1]

    def repeats(self) -> list[int]:
        return sorted({e.repeat for e in self.episodes.values()})

    def errored(self) -> list[EpisodeRecord]:
        """The arm's episodes that ended in an error (left out of every mean)."""
        return [e for e in self.episodes_of() if e.error]

    def error_summary(self, limit: int = 3) -> str:
        """``N of M episodes errored`` with the most frequent reasons, or empty."""
        errored = self.errored()
        if not errored:
            return ""
        counts: dict[str, int] = {}
        for episode in errored:
            reason = " ".join(str(episode.error).split())
            reason = reason if len(reason) <= 200 else reason[:199] + "…"
            counts[reason] = counts.get(reason, 0) + 1
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]
        reasons = "; ".join(f"{count} × {reason}" for reason, count in ranked)
        return f"{len(errored)} of {len(self.episodes)} episodes errored ({reasons})"

    def trace_count(self) -> int:
        return sum(1 for e in self.episodes.values() if e.trace)


def _differences(runs: Sequence[RunDirectory], fields: Sequence[str],
                 value_of) -> list[str]:
    """For each field on which the runs disagree, 'field: v1 (runs…) vs v2 (runs…)'."""
    short = [run.path.name or str(run.path) for run in runs]
    shown = short if len(set(short)) == len(short) else [str(run.path) for run in runs]
    lines = []
    for name in fields:
        groups: dict[str, list[str]] = {}
        for run, display in zip(runs, shown, strict=True):
            groups.setdefault(_canonical(value_of(run, name)), []).append(display)
        if len(groups) > 1:
            parts = [f"{json.loads(value)!r} ({', '.join(names)})"
                     for value, names in groups.items()]
            lines.append(f"{name}: " + " vs ".join(parts))
    return lines


def check_compatible(runs: Sequence[RunDirectory], allow_mixed: bool = False) -> list[str]:
    """Refuse runs that do not belong in one table; returns warnings for allowed mixtures.

    All runs must be on one split. Budgets (every settings field that is not a condition)
    and the instance size must agree unless ``allow_mixed``; the error names each field, its
    values and the runs holding them.
    """
    if not runs:
        raise HeuresisError("no run directories given")
    split_lines = _differences(runs, ["split"], lambda run, name: run.split)
    if split_lines:
        raise HeuresisError("the runs are on different splits, so they share no instances: "
                            + "; ".join(split_lines) + ". Report each split separately")
    settings_fields = sorted({k for run in runs for k in run.settings} - set(CONDITION_FIELDS))
    budget_fields = [f for f in BUDGET_FIELDS if f in settings_fields] + \
        [f for f in settings_fields if f not in BUDGET_FIELDS]
    lines = _differences(runs, budget_fields, lambda run, name: run.settings.get(name))
    lines += _differences(runs, SIZE_FIELDS, lambda run, name: run.config.get(name))
    if lines and not allow_mixed:
        raise HeuresisError(
            "the runs have different budgets, and every policy in one table must run under "
            "identical budgets: " + "; ".join(lines) + ". Re-run with the same budgets, or "
            "pass --allow-mixed (allow_mixed=True) to put them in one table anyway")
    return [f"mixed budgets allowed: {line}" for line in lines]


def _check_hashes(runs: Sequence[RunDirectory]) -> None:
    seen: dict[InstanceId, dict[str, list[str]]] = {}
    for run in runs:
        for episode in run.episodes:
            by_hash = seen.setdefault(episode.instance, {})
            names = by_hash.setdefault(episode.instance_sha256, [])
            if str(run.path) not in names:
                names.append(str(run.path))
    for instance, by_hash in seen.items():
        if len(by_hash) > 1:
            detail = "; ".join(f"{sha[:16]}… in {', '.join(paths)}"
                               for sha, paths in by_hash.items())
            raise HeuresisError(
                f"instance {'/'.join(map(str, instance))} has different data in different "
                f"runs ({detail}): the runs were generated with another generator version, "
                "size or test salt, so their episodes cannot be compared")


def _condition_text(name: str, value: Any) -> str:
    if name == "guided":
        return "guided" if value else "unguided"
    if name == "toolbox":
        return f"{value} toolbox"
    if name == "prompt_level":
        return f"prompt {value}"
    if name == "target":
        return f"target {value}"
    if name == "experiments":
        return f"{value or 0} experiment rows"
    return f"{name}={value}"


def _shown_option(name: str, values: Iterable[Any]) -> bool:
    """Options never shown in a label: addresses and credentials (a URL with a random port or
    a key says nothing about the policy)."""
    if connection_option(name):
        return False
    return not any(isinstance(v, str) and re.match(r"^[a-z][a-z0-9+.-]*://", v)
                   for v in values)


def _assign_labels(arms: list[Arm]) -> None:
    """Label = policy, plus the settings and options that tell its arms apart; an arm run in
    the guided condition (it starts from PC-KCI's output) always says ``guided``.

    A ``name`` option that differs between the arms replaces the policy name and its options
    (it is the policy's own display name); addresses, ports and credentials never enter a
    label. Arms told apart only by such options are numbered.
    """
    by_policy: dict[str, list[Arm]] = {}
    for arm in arms:
        by_policy.setdefault(arm.policy, []).append(arm)
    for policy, group in by_policy.items():
        if len(group) == 1:
            group[0].label = policy
            if group[0].settings.get("guided") and "guided" not in policy:
                group[0].label = f"{policy} [guided]"  # it starts from PC-KCI's output
            continue
        setting_names = sorted({k for a in group for k in a.settings})
        varying = [k for k in setting_names
                   if len({_canonical(a.settings.get(k)) for a in group}) > 1]
        size_varying = [k for k in SIZE_FIELDS
                        if len({_canonical(a.size.get(k)) for a in group}) > 1]
        option_names = sorted({k for a in group for k in a.policy_options})
        option_varying = [k for k in option_names
                          if len({_canonical(a.policy_options.get(k)) for a in group}) > 1]
        named = "name" in option_varying
        shown = [k for k in option_varying if k != "name" and _shown_option(
            k, [a.policy_options.get(k) for a in group])]
        for number, arm in enumerate(group, start=1):
            parts = [_condition_text(k, arm.settings.get(k)) for k in varying]
            if "guided" not in varying and arm.settings.get("guided") and "guided" not in policy:
                parts.insert(0, "guided")
            parts += [f"{k}={arm.size.get(k)}" for k in size_varying]
            if not named:  # a policy's own name already tells its option sets apart
                parts += [f"{k}={arm.policy_options[k]}" if k in arm.policy_options
                          else f"{k}=default" for k in shown]
            base = str(arm.policy_options.get("name") or policy) if named else policy
            if not parts and not named:
                parts = [f"arm {number}"]
            arm.label = f"{base} [{', '.join(parts)}]" if parts else base
        labels = [arm.label for arm in group]
        for number, arm in enumerate(group, start=1):  # two arms must never share a label
            if labels.count(arm.label) > 1:
                arm.label = f"{arm.label} #{number}"
    for arm in arms:  # an imported log's policy and model are its claim
        if self_reported(arm):
            arm.label = f"{arm.label} (self-reported)"


def build_arms(runs: Sequence[RunDirectory]) -> list[Arm]:
    """Group runs into arms (same policy, options, settings and size), checking each arm has
    every (instance, repeat) at most once and every instance one data hash."""
    _check_hashes(runs)
    arms: dict[str, Arm] = {}
    for run in runs:
        size = {k: run.config.get(k) for k in SIZE_FIELDS}
        candidate = Arm(run.policy, run.policy_options, run.settings, size, [], {})
        arm = arms.setdefault(candidate.key, candidate)
        arm.runs.append(run)
        for episode in run.episodes:
            if episode.slot in arm.episodes:
                other = arm.episodes[episode.slot].run_path
                raise HeuresisError(
                    f"episode {'/'.join(map(str, episode.slot))} of policy {run.policy!r} "
                    f"appears in two runs with the same settings ({other} and {run.path}); "
                    "pass each run once")
            arm.episodes[episode.slot] = episode
    ordered = sorted(arms.values(), key=lambda a: (a.is_reference, a.policy, a.key))
    _assign_labels(ordered)
    return ordered


def pc_kci_arm(arms: Sequence[Arm]) -> Arm | None:
    """PC-KCI's reference arm: the ``pc-kci`` run, else the ``guided-start`` run (the same
    output, submitted unchanged in the guided condition)."""
    found = reference_arm(arms, PC_KCI)
    return found if found is not None else reference_arm(arms, GUIDED_START)


def reference_arm(arms: Sequence[Arm], policy: str, for_arm: Arm | None = None) -> Arm | None:
    """The arm of reference ``policy`` to compare ``for_arm`` with.

    With one arm of that policy, that arm. With several: the one whose conditions equal
    ``for_arm``'s (None when there is no unique match); without ``for_arm``, the one run under
    the default conditions (unguided, full toolbox, prompt level 1, no stated target), else
    the first. None when the policy has no arm.
    """
    candidates = [a for a in arms if a.policy == policy]
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    if for_arm is not None:
        same = [a for a in candidates if a.conditions() == for_arm.conditions()]
        return same[0] if len(same) == 1 else None
    defaults = {"guided": False, "toolbox": "full", "prompt_level": 1, "target": "none"}
    plain = [a for a in candidates if a.conditions() == defaults]
    return plain[0] if plain else candidates[0]


@dataclass
class LoadedRuns:
    """Runs checked for one report, grouped into arms; question runs (``task="qa"``) apart,
    for the report's question section (:mod:`heuresis_env.reports.questions`)."""

    runs: list[RunDirectory]
    arms: list[Arm]
    warnings: list[str]
    question_runs: list[RunDirectory] = field(default_factory=list)
    #: sealed runs read without their salt: nothing of them could be checked
    unverified: list[str] = field(default_factory=list)
    #: the re-derivation of every run of a reference policy (verified or not, with why)
    reference_checks: list[ReferenceCheck] = field(default_factory=list)
    #: the reference arms left out (a run not re-derived), each with why, one line
    refused_references: list[tuple[Arm, str]] = field(default_factory=list)

    def families(self) -> list[str]:
        return family_order({f for arm in self.arms for f in arm.families()})

    def arm(self, label: str) -> Arm:
        for arm in self.arms:
            if arm.label == label:
                return arm

        raise UnknownNameError("arm", label, [a.label for a in self.arms])


def load_runs(paths: Sequence[str | os.PathLike], allow_mixed: bool = False) -> LoadedRuns:
    """Load, check and group the run directories of one report (see the module docstring)."""
    if not paths:
        raise HeuresisError("give at least one run directory")
    resolved = find_run_directories(paths)  # a demo's folder stands for its runs/*
    real = [os.path.realpath(p) for p in resolved]  # a symbolic-link loop is no error here
    duplicates = sorted({str(p) for p, r in zip(resolved, real, strict=True)
                         if real.count(r) > 1})
    if duplicates:
        raise HeuresisError(f"run directories given more than once: {duplicates}")
    loaded = [load_run(p) for p in resolved]
    unverified = [str(run.path) for run in loaded if not salt_available(run)]
    for run in loaded:  # scores are re-scored and seals checked, never trusted (issue 30)
        verify_run(run, complete=True)
    runs = [run for run in loaded if run.task == "graph"]
    question_runs = [run for run in loaded if run.task != "graph"]
    warnings = [w for run in loaded for w in run.warnings]
    for group in (runs, question_runs):
        if group:
            warnings += check_compatible(group, allow_mixed)
    arms = build_arms(runs) if runs else []
    check_references(arms)
    arms, checks, refused = verify_references(arms)
    warnings[:0] = [refused_text(arm, reason) for arm, reason in refused]
    warnings += [f"{arm.label}: {arm.error_summary()}; its means leave them out"
                 for arm in arms if arm.errored()]
    warnings += [f"{arm.label}: {note}" for arm in arms
                 for note in dict.fromkeys(n for e in arm.episodes_of() for n in e.notes)]
    warnings += [self_reported_text(arm) for arm in arms if self_reported(arm)]
    if unverified:
        warnings.insert(0, unverified_text(unverified))
    return LoadedRuns(runs, arms, warnings, question_runs, unverified, checks, refused)


def salt_available(run: RunDirectory) -> bool:
    """Whether a run can be checked here: unsealed, or sealed and ``$HEURESIS_TEST_SALT`` is
    its salt (a sealed run is checked — seals and scores — only with its salt)."""
    if not run.config.get("salt_digest"):
        return True
    try:
        return run_salt(run) is not None
    except HeuresisError:
        return False


def self_reported(arm: Arm) -> bool:
    """Whether an arm's policy and model are only what its files claim (an imported log)."""
    return any(run.config.get("attribution") == SELF_REPORTED for run in arm.runs)


def self_reported_text(arm: Arm) -> str:
    """Why an imported arm's attribution is the log's claim (issue 46, route 9)."""
    models = sorted({str((run.config.get("inspect") or {}).get("model")) for run in arm.runs})
    return (f"{arm.label}: SELF-REPORTED attribution: imported from an inspect log, whose "
            f"policy name ({arm.policy!r}) and model ({', '.join(models)}) are the log's claim, "
            "which anyone can edit; its scores were computed again by the referee, who played "
            "them was not")


def unverified_text(paths: Sequence[str]) -> str:
    """Why sealed runs read without their salt are unverified (issue 46, route 8)."""
    return (f"UNVERIFIED: {len(paths)} sealed run(s) ({', '.join(paths)}) were read without "
            "their salt ($HEURESIS_TEST_SALT unset, or not the salt they ran with), so neither "
            "their seals nor their scores could be checked: their numbers are what their files "
            "claim, and anyone could have edited them. Set $HEURESIS_TEST_SALT to their salt "
            "to verify them.")


def check_references(arms: Sequence[Arm]) -> None:
    """Refuse a reference arm (BCA_φ, PC-KCI, the oracle) with errored episodes: every gain
    and headroom of the report is measured from it, so a crashed or refused reference would
    shift them all."""
    for arm in arms:
        if arm.is_reference and arm.errored():
            first = arm.errored()[0]
            runs = ", ".join(str(run.path) for run in arm.runs)
            raise HeuresisError(
                f"the reference run {arm.label} ({runs}) has errors: {arm.error_summary()}; "
                f"e.g. {first.episode_id}: {first.error}. Every gain in the report is measured "
                "from this reference, so it is refused: fix the cause and run it again (or "
                "leave it out of the report)")


def verify_references(arms: Sequence[Arm]
                      ) -> tuple[list[Arm], list[ReferenceCheck], list[tuple[Arm, str]]]:
    """Re-derive every run of a reference arm (BCA_φ, the oracle, PC-KCI:
    :func:`~heuresis_env.evaluation.reference_check.rederive_reference`), on every split, and
    leave out each arm with a run that is not what its policy gives again: every gain and
    headroom of the report is measured from a reference, so one that only says it is one (an
    oracle's results relabelled ``bca``, edited final graphs) is never used. Returns the arms
    kept, every run's check, and the refused arms with why."""
    kept: list[Arm] = []
    checks: list[ReferenceCheck] = []
    refused: list[tuple[Arm, str]] = []
    for arm in arms:
        if arm.policy not in REFERENCE_POLICIES:
            kept.append(arm)
            continue
        arm_checks = [rederive_reference(run) for run in arm.runs]
        checks += arm_checks
        failed = [check for check in arm_checks if not check.verified]
        if failed:
            refused.append((arm, "; ".join(check.text() for check in failed)))
        else:
            kept.append(arm)
    return kept, checks, refused


def refused_text(arm: Arm, reason: str) -> str:
    """Why a reference arm is left out of the report (issue 46, route 6)."""
    return (f"UNVERIFIED reference {arm.label}, not used as {REFERENCE_ROLES[arm.policy]}: a "
            "reference is re-derived from its instances (its policy played again with its "
            f"options must give the graphs it recorded), and this one was not — {reason}. It "
            "is left out of the report, so what is measured from it (Δʳ_φ, the headrooms) is "
            "not computed here; run the reference again with `heuresis evaluate`.")


# ---- the name-only probe's output (``heuresis probe --out DIR``) --------------------------------

PROBE_FILE = "probe.json"
PROBE_FORMAT_VERSION = 1


def load_probe(directory: str | os.PathLike) -> dict[str, Any]:
    """The ``probe.json`` a name-only probe wrote into ``directory``, checked for its table."""
    path = Path(directory) / PROBE_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunFormatError(f"{directory} has no {PROBE_FILE}; pass the directory that "
                             "'heuresis probe --out' wrote") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunFormatError(f"{path} is not JSON ({exc})") from None
    if not isinstance(document, dict) or document.get("format_version") != PROBE_FORMAT_VERSION:
        raise RunFormatError(f"{path} is not a probe file of format {PROBE_FORMAT_VERSION}")
    table = document.get("table")
    if not isinstance(table, dict) or not isinstance(table.get("rows"), list):
        raise RunFormatError(f"{path} has no table")
    return document
