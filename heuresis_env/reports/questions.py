"""The report's question section: accuracy of question runs (``task="qa"``) per level and
sub-type per family, graph and effect grades, yes/no answer bias, cost and steps per question.

Question runs form **arms** as graph runs do (one policy, options, settings, name mode and
instance size). The unit is the **question**: an arm's value on a question is the mean over
its repeats; a cell is the mean over the questions of the cell. Accuracy intervals are 95%
Wilson score intervals over the questions (:func:`heuresis_env.metrics.wilson_interval`),
which stay honest when a cell of a few questions is all right or all wrong; graph F1 gets a
percentile bootstrap over questions seeded per cell.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation.run_format import EpisodeRecord, RunDirectory
from heuresis_env.metrics import wilson_interval
from heuresis_env.questions import KINDS, LEVELS
from heuresis_env.reports.document import BulletList, Heading, Paragraph, TableBlock
from heuresis_env.reports.loading import family_order
from heuresis_env.reports.tables import ALL, MISSING, Settings, Table, fmt, report_interval

QuestionSlot = tuple[str, str, int, int]  # (family, split, question id, repeat)


@dataclass
class QuestionArm:
    """The question runs of one policy with the same options, settings, names and size."""

    policy: str
    policy_options: dict[str, Any]
    settings: dict[str, Any]
    name_mode: str
    size: dict[str, Any]
    runs: list[RunDirectory] = field(default_factory=list)
    episodes: dict[QuestionSlot, EpisodeRecord] = field(default_factory=dict)
    label: str = ""

    @property
    def key(self) -> str:
        return json.dumps([self.policy, self.policy_options, self.settings, self.name_mode,
                           self.size], sort_keys=True, default=str)

    def families(self) -> list[str]:
        return family_order({e.family for e in self.episodes.values()})

    def per_question(self, keep: Callable[[EpisodeRecord], bool] = lambda e: True,
                     value: Callable[[EpisodeRecord], float] | None = None,
                     family: str = ALL) -> list[float]:
        """One value per question (mean over its repeats) of the episodes ``keep`` accepts."""
        value = value or (lambda e: e.score("correct"))
        grouped: dict[tuple[str, str, int], list[float]] = {}
        for (fam, split, question, _), episode in sorted(self.episodes.items()):
            if (family == ALL or fam == family) and keep(episode):
                grouped.setdefault((fam, split, question), []).append(value(episode))
        out = []
        for values in grouped.values():
            finite = [v for v in values if not math.isnan(v)]
            out.append(float(np.mean(finite)) if finite else math.nan)
        return out


def _question(episode: EpisodeRecord) -> dict[str, Any]:
    return dict(episode.question or {})


def _of_level(level: str) -> Callable[[EpisodeRecord], bool]:
    return lambda e: _question(e).get("level") == level


def _score_of(name: str) -> Callable[[EpisodeRecord], float]:
    return lambda episode: episode.score(name)


def _of_kind(kind: str) -> Callable[[EpisodeRecord], bool]:
    return lambda e: _question(e).get("kind") == kind


def question_arms(runs: Sequence[RunDirectory]) -> list[QuestionArm]:
    """Group question runs into arms and label them (policy, plus what tells arms apart)."""
    arms: dict[str, QuestionArm] = {}
    for run in runs:
        candidate = QuestionArm(run.policy, run.policy_options, run.settings,
                                str(run.config.get("name_mode", "anonymous")),
                                {k: run.config.get(k) for k in ("d", "n")})
        arm = arms.setdefault(candidate.key, candidate)
        arm.runs.append(run)
        for episode in run.episodes:
            question = _question(episode)
            slot = (episode.family, episode.split, int(question.get("id", -1)), episode.repeat)
            if slot in arm.episodes:
                raise HeuresisError(
                    f"question episode {'/'.join(map(str, slot))} of policy {run.policy!r} "
                    f"appears in two runs with the same settings ({arm.episodes[slot].run_path} "
                    f"and {run.path}); pass each run once")
            arm.episodes[slot] = episode
    ordered = sorted(arms.values(), key=lambda a: (a.policy, a.key))
    by_policy: dict[str, list[QuestionArm]] = {}
    for arm in ordered:
        by_policy.setdefault(arm.policy, []).append(arm)
    for policy, group in by_policy.items():
        for arm in group:
            parts = [] if arm.name_mode == "anonymous" else [f"{arm.name_mode} names"]
            if len(group) > 1:
                for name in sorted({k for a in group for k in a.settings}):
                    if len({json.dumps(a.settings.get(name)) for a in group}) > 1:
                        parts.append(f"{name}={arm.settings.get(name)}")
                for name in sorted({k for a in group for k in a.policy_options}):
                    if len({json.dumps(a.policy_options.get(name)) for a in group}) > 1:
                        parts.append(f"{name}={arm.policy_options.get(name, 'default')}")
            arm.label = policy + (f" [{', '.join(parts)}]" if parts else "")
    return ordered


def _families(arms: Sequence[QuestionArm]) -> list[str]:
    families = family_order({f for arm in arms for f in arm.families()})
    return [*families, ALL] if len(families) > 1 else families


def _accuracy(values: Sequence[float], settings: Settings) -> tuple[str, dict[str, Any]]:
    result = wilson_interval(np.asarray(values, dtype=float), confidence=settings.confidence)
    if result.n == 0:
        return MISSING, {}
    text = f"{result.mean:.2f} [{result.low:.2f}, {result.high:.2f}] ({result.n})"
    return text, {"mean": result.mean, "low": result.low, "high": result.high, "n": result.n}


def level_table(arms: Sequence[QuestionArm], settings: Settings) -> Table:
    """Accuracy per level (and over all questions) for every arm and family."""
    table = Table("qa_levels", "Questions: accuracy per level (95% Wilson interval, questions)",
                  ["policy", "family", *LEVELS, "all", "unanswered"])
    for arm in arms:
        for family in _families([arm]):
            cells: list[str] = []
            values: dict[str, Any] = {"label": arm.label, "family": family}
            for level in (*LEVELS, ALL):
                keep = (lambda e: True) if level == ALL else _of_level(level)
                text, numbers = _accuracy(arm.per_question(keep, family=family), settings)
                cells.append(text)
                values[level] = numbers
            unanswered = arm.per_question(value=lambda e: 1.0 - e.score("answered"),
                                          family=family)
            cells.append(f"{100 * float(np.nanmean(unanswered)):.0f}%" if unanswered
                         else MISSING)
            table.add([arm.label, family, *cells], values)
    table.notes.append("Cells: share of questions answered correctly (yes/no: the exact "
                       "answer; graphs: the exact adjacencies and v-structures; effects: "
                       "within 10% of the Monte Carlo effect), 95% Wilson interval, number of "
                       "questions. An unanswered question counts as wrong.")
    return table


def subtype_table(arms: Sequence[QuestionArm], settings: Settings) -> Table:
    """Accuracy per sub-type (IT, CIT, …, ATE) for every arm, per family and over all."""
    families = _families(arms)
    table = Table("qa_subtypes", "Questions: accuracy per sub-type and family (95% Wilson "
                  "interval, questions)", ["policy", "sub-type", "level", *families])
    for arm in arms:
        for kind in KINDS.values():
            cells: list[str] = []
            values: dict[str, Any] = {"label": arm.label, "kind": kind.name}
            for family in families:
                text, numbers = _accuracy(arm.per_question(_of_kind(kind.name), family=family),
                                          settings)
                cells.append(text)
                values[family] = numbers
            if all(c == MISSING for c in cells):
                continue
            table.add([arm.label, kind.abbreviation, kind.level, *cells], values)
    table.notes.append("IT, CIT, MCIT: (conditional) independence given none, one, several "
                       "variables; CAUSE: direct cause; COL: collider; CONF: confounding; TOTAL "
                       "and PARTIAL: whole and partial graph; ATE: average effect.")
    return table


def grade_table(arms: Sequence[QuestionArm], settings: Settings) -> Table:
    """Graded scores: graph adjacency F1 and skeleton matches, effect errors."""
    table = Table("qa_grades", "Questions: graph F1 and effect errors",
                  ["policy", "family", "TOTAL F1 [95% CI]", "PARTIAL F1 [95% CI]",
                   "graphs: skeleton exact", "ATE within 10%", "ATE median rel. error",
                   "ATE median abs. error"])
    for arm in arms:
        for family in _families([arm]):
            cells: list[str] = []
            values: dict[str, Any] = {"label": arm.label, "family": family}
            for kind in ("whole_graph", "partial_graph"):
                f1 = arm.per_question(_of_kind(kind), lambda e: e.score("f1"), family)
                result = report_interval(np.asarray(f1, dtype=float), None, settings)
                cells.append(MISSING if result.n == 0 else
                             f"{result.mean:.3f} [{result.low:.3f}, {result.high:.3f}]")
                values[f"{kind}_f1"] = result.mean
            graphs = [v for kind in ("whole_graph", "partial_graph")
                      for v in arm.per_question(_of_kind(kind),
                                                lambda e: e.score("skeleton_exact"), family)]
            cells.append(fmt(float(np.nanmean(graphs)), 2) if graphs else MISSING)
            effect = arm.per_question(_of_kind("average_effect"), family=family)
            cells.append(fmt(float(np.mean(effect)), 2) if effect else MISSING)
            for name in ("rel_error", "abs_error"):
                errors = [v for v in arm.per_question(_of_kind("average_effect"),
                                                      _score_of(name), family)
                          if not math.isnan(v)]
                values[f"median_{name}"] = float(np.median(errors)) if errors else math.nan
                cells.append(fmt(values[f"median_{name}"]))
            if all(c == MISSING for c in cells):
                continue
            table.add([arm.label, family, *cells], values)
    table.notes.append("F1: adjacency F1 of the answer against the target's adjacencies, mean "
                       "over questions (unanswered: 0) with a 95% bootstrap interval. Errors of "
                       "effect answers are against the Monte Carlo effect (its standard error "
                       "is below 1% of it); medians over answered questions.")
    return table


def bias_table(arms: Sequence[QuestionArm], settings: Settings) -> Table:
    """Yes/no questions: accuracy by the true answer, and how often the arm answers yes."""
    table = Table("qa_answers", "Questions: yes/no accuracy by true answer",
                  ["policy", "family", "truth yes", "truth no", "answered yes"])

    def truth_is(answer: str) -> Callable[[EpisodeRecord], bool]:
        return lambda e: (_question(e).get("truth") or {}).get("answer") == answer

    for arm in arms:
        for family in _families([arm]):
            yes_text, yes = _accuracy(arm.per_question(truth_is("yes"), family=family), settings)
            no_text, no = _accuracy(arm.per_question(truth_is("no"), family=family), settings)
            said_yes = arm.per_question(lambda e: _question(e).get("answer_type") == "yes_no",
                                        lambda e: float(_question(e).get("answer") == "yes"),
                                        family)
            if not said_yes:
                continue
            share = float(np.mean(said_yes))
            table.add([arm.label, family, yes_text, no_text, f"{100 * share:.0f}%"],
                      {"label": arm.label, "family": family, "truth_yes": yes, "truth_no": no,
                       "answered_yes": share})
    table.notes.append("Every question set holds as many yes as no questions of each yes/no "
                       "sub-type, so a policy without bias answers yes about half the time.")
    return table


def cost_table(arms: Sequence[QuestionArm], settings: Settings) -> Table:
    """Steps, wall time, tokens and cost per question, per level."""
    table = Table("qa_cost", "Questions: cost and steps per question",
                  ["policy", "level", "questions", "steps / question", "seconds / question",
                   "prompt tokens / question", "completion tokens / question",
                   "cost / question ($)", "unanswered", "errors"])
    for arm in arms:
        for level in (*LEVELS, ALL):
            episodes = [e for e in arm.episodes.values()
                        if level == ALL or _question(e).get("level") == level]
            if not episodes:
                continue

            def mean(values: list[float | int | None]) -> float:
                kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
                return float(np.mean(kept)) if kept else math.nan

            questions = {(e.family, e.split, _question(e).get("id")) for e in episodes}
            steps = mean([e.steps for e in episodes])
            seconds = mean([e.wall_seconds for e in episodes])
            prompt = mean([e.prompt_tokens for e in episodes])
            completion = mean([e.completion_tokens for e in episodes])
            cost = mean([e.cost_usd for e in episodes])
            unanswered = mean([1.0 - e.score("answered") for e in episodes])
            errors = sum(bool(e.error) for e in episodes)
            table.add([arm.label, level, str(len(questions)), fmt(steps, 1), fmt(seconds, 2),
                       fmt(prompt, 0), fmt(completion, 0), fmt(cost, 4),
                       f"{100 * unanswered:.0f}%", str(errors)],
                      {"label": arm.label, "level": level, "steps": steps, "seconds": seconds,
                       "prompt_tokens": prompt, "completion_tokens": completion, "cost": cost,
                       "unanswered": unanswered, "errors": errors})
    table.notes.append("Means over episodes; tokens and cost only for language-model policies "
                       f"({MISSING} otherwise). Errors: episodes the policy or environment "
                       "ended with an exception.")
    return table


def question_blocks(runs: Sequence[RunDirectory], settings: Settings
                    ) -> tuple[list[Any], Table]:
    """The question section's blocks, and its headline table (accuracy per level)."""
    arms = question_arms(runs)
    levels = level_table(arms, settings)
    blocks: list[Any] = [
        Heading("Questions: causal questions about a table (task qa)"),
        Paragraph("One question per episode from the split's fixed question set, answered "
                  "exactly from the hidden model (docs/questions.md). Unit: the question; an "
                  "arm's value on a question is the mean over its repeats."),
        BulletList([f"{arm.label}: {len(arm.episodes)} episodes, families "
                    f"{', '.join(arm.families())}; "
                    + ", ".join(f"{k}={v}" for k, v in sorted(arm.settings.items()))
                    + f"; runs: {', '.join(str(r.path) for r in arm.runs)}" for arm in arms]),
        TableBlock(levels), TableBlock(subtype_table(arms, settings)),
        TableBlock(grade_table(arms, settings)), TableBlock(bias_table(arms, settings)),
        TableBlock(cost_table(arms, settings))]
    return blocks, levels
