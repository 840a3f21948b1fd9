"""The inspect scorers: the referee's scores of each episode, and the residual gain over BCA_φ.

The environment scored the episode when it ended — with the true graph (or the question's
truth) held in the referee's closures of this process — and the solver left that outcome in
memory for the scorer (:data:`~agents.inspect_task.solver.OUTCOMES`); nothing the sample or
the log holds is read back as a score. A graph episode scores adjacency F1, precision, recall,
SHD, SHD to the CPDAG, nSHD and the edge count (``docs/scores.md``) and, with ``bca=True``,
Δʳ against BCA_φ: the F1 of the ``bca`` policy on the same instance under the same settings —
run through the evaluation runner, in its own process, exactly as ``heuresis evaluate
--policy bca`` runs it — subtracted from the episode's. A question episode scores
``correct`` and ``answered`` and its kind's grades (``docs/questions.md``).

Undefined values (precision of an empty graph, a failed or skipped BCA run) are NaN, which
inspect counts as unscored (it would count ``None`` as 0); every key is in every score, as
inspect's metrics require.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.to_thread
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from agents.inspect_task.solver import OUTCOMES, EpisodePlan, sealed_salt
from heuresis_env.evaluation import (
    EpisodeRunner,
    EpisodeTask,
    RunSpec,
    episode_id,
    episode_seed,
    salt_digest,
    worker_name,
)

__all__ = ["BCA_POLICY", "GRAPH_SCORE_KEYS", "QUESTION_SCORE_KEYS", "bca_f1",
           "heuresis_graph_scorer", "heuresis_question_scorer", "score_value"]

#: the reference policy of the residual gain (BCA_φ: the best reference algorithm of the
#: family on the dev split), resolved through the ``heuresis.policies`` entry points
BCA_POLICY = "bca"
#: a graph sample's score keys (a result line's scores, then the run's facts and the gain)
GRAPH_SCORE_KEYS = ("f1", "precision", "recall", "shd", "nshd", "shd_cpdag", "n_edges",
                    "finished", "steps", "f1_bca", "delta_bca")
#: a question sample's score keys (the grades that do not apply to its kind are None)
QUESTION_SCORE_KEYS = ("correct", "answered", "f1", "abs_error", "rel_error", "finished",
                       "steps")


def score_value(value: Any) -> float | int:
    """A score as inspect stores it: a finite number, else NaN (unscored)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number if math.isfinite(number) else math.nan


_BCA_LOCK = threading.Lock()
_BCA_F1: dict[tuple, float | None] = {}


def bca_f1(plan: EpisodePlan, family: str, split: str, index: int) -> float | None:
    """F1 of the ``bca`` policy on an instance under the plan's settings: its episode as
    ``heuresis evaluate --policy bca`` plays it (repeat 0, the runner's seed, the policy in its
    own process), computed once per process; None when the run fails."""
    salt = sealed_salt(split)
    key = (family, split, index, plan.d, plan.n, plan.settings, salt_digest(salt))
    with _BCA_LOCK:
        if key in _BCA_F1:
            return _BCA_F1[key]
        name = episode_id(family, split, index, 0)
        spec = RunSpec(policy=BCA_POLICY, policy_options={}, settings=plan.settings, d=plan.d,
                       n=plan.n, salt=salt, policy_isolation="process")
        runner = EpisodeRunner(spec, worker_name("inspect"))
        try:
            record = runner.run(EpisodeTask(name, family, split, index, 0,
                                            episode_seed(name))).record
        finally:
            runner.close()
        f1 = None if record["error"] else score_value(record["scores"].get("f1"))
        _BCA_F1[key] = None if f1 is None or math.isnan(f1) else float(f1)
        return _BCA_F1[key]


def _missing(keys: tuple[str, ...]) -> Score:
    return Score(value=dict.fromkeys(keys, math.nan), explanation="the Heuresis episode of this sample did not run to "
                                       "its end (the solver failed or was replaced); unscored",
                 reason="no_response")


def _common(record: Mapping[str, Any]) -> dict[str, Any]:
    return {"episode_id": record["episode_id"], "policy": record["policy"],
            "termination_reason": record["termination_reason"],
            "steps": record["steps"], "wall_seconds": round(float(record["wall_seconds"]), 3),
            "error": record.get("error")}


@scorer(metrics={"f1": [mean(), stderr()], "delta_bca": [mean(), stderr()],
                 "shd": [mean()], "shd_cpdag": [mean()], "finished": [mean()]})
def heuresis_graph_scorer(bca: bool = True) -> Scorer:
    """The referee's scores of a graph episode and, with ``bca``, its residual gain over BCA_φ
    on the same instance (``delta_bca`` = F1 − F1 of BCA_φ)."""

    async def score(state: TaskState, target: Target) -> Score:
        found = OUTCOMES.pop(state.uuid)
        if found is None:
            return _missing(GRAPH_SCORE_KEYS)
        outcome, plan, episode = found
        record = outcome.record
        scores = record["scores"]
        value: dict[str, Any] = {key: score_value(scores.get(key)) for key in GRAPH_SCORE_KEYS}
        value.update(finished=int(bool(record["finished"])), steps=int(record["steps"]))
        reference = None
        if bca and record.get("ground_truth", True):
            reference = await anyio.to_thread.run_sync(functools.partial(
                bca_f1, plan, episode.family, episode.split, episode.index))
        value["f1_bca"] = score_value(reference)
        value["delta_bca"] = value["f1"] - value["f1_bca"]  # NaN when either is
        explanation = (f"adjacency F1 {_shown(value['f1'])}, SHD {_shown(value.get('shd'))} "
                       f"({record['termination_reason']} after {record['steps']} steps)")
        if bca:
            explanation += (f"; BCA_φ F1 {_shown(reference)}, Δʳ {_shown(value['delta_bca'])}")
        return Score(value=value, answer=state.output.completion, explanation=explanation,
                     metadata=_common(record))

    return score


@scorer(metrics={"correct": [mean(), stderr()], "answered": [mean()]})
def heuresis_question_scorer() -> Scorer:
    """The referee's scores of a question episode: ``correct`` (1 or 0), ``answered``, and the
    kind's grades (graph questions F1, effect questions the absolute and relative error)."""

    async def score(state: TaskState, target: Target) -> Score:
        found = OUTCOMES.pop(state.uuid)
        if found is None:
            return _missing(QUESTION_SCORE_KEYS)
        record = found[0].record
        scores = record["scores"]
        value: dict[str, Any] = {key: score_value(scores.get(key))
                                 for key in QUESTION_SCORE_KEYS}
        value.update(finished=int(bool(record["finished"])), steps=int(record["steps"]))
        question = record.get("question") or {}
        explanation = (f"{'correct' if value.get('correct') else 'wrong'} "
                       f"({'answered' if value.get('answered') else 'unanswered'}; "
                       f"{question.get('kind', 'question')}, {record['termination_reason']} "
                       f"after {record['steps']} steps)")
        return Score(value=value, answer=state.output.completion, explanation=explanation,
                     metadata=_common(record))

    return score


def _shown(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3f}" if isinstance(value, float) else str(value)

