"""Scoring directed models offline: adjacency F1, SHD and nSHD against PC-KCI, BCA_φ and the
ideal oracle on the same instances, with the ranking's best cut (the ceiling of its rule).

For each instance (:func:`score_directed`): the model's edge probabilities
(:func:`agents.amortized.inference.edge_probabilities`), decoded by each requested rule, scored
by :func:`heuresis_env.metrics.score_graph` against the hidden DAG; PC-KCI's output (the
guided start), BCA_φ's (the shipped selection's algorithm: the guided start for ``pc-kci``,
else the reference algorithm's cached run) and the ideal oracle (PC-KCI with every wrongly
deleted true edge restored, undirected). ``best_cut`` is the F1 of the model's P(adjacent)
ranking cut at the best size in hindsight: what a perfect threshold on this ranking reaches.
A sealed test instance's truth stays in this process's memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.amortized.directed import AviciModel, DirectedModel
from agents.amortized.evaluation import select_edges
from agents.amortized.inference import (
    adjacency_probabilities,
    blend_adjacency,
    check_blend_weight,
    decode,
    ensemble_probabilities,
)
from agents.amortized.model import GridModel
from agents.amortized.policy import AmortizedPolicy
from agents.learned_repair import BCA_FILE, bca_choices
from heuresis_env.discovery import cached_run_algorithm
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import evidence_grid, guided_start
from heuresis_env.generation import InstanceKey, cached_instance
from heuresis_env.graphs import Graph, graph_from_edge_lines
from heuresis_env.metrics import paired_bootstrap, score_graph
from heuresis_env.seeding import int31_seed

__all__ = ["DirectedScore", "STUDY_REFERENCES", "read_records", "score_directed", "summarize_directed",
           "write_records"]


@dataclass
class DirectedScore:
    family: str
    split: str
    index: int
    d: int
    scores: dict[str, dict[str, float]] = field(default_factory=dict)  # arm -> f1, shd, ...
    best_cut: float = float("nan")
    bca_algorithm: str = ""


def _best_cut(q: np.ndarray, truth: np.ndarray) -> float:
    iu = np.triu_indices(truth.shape[0], 1)
    ranked = truth[iu][np.argsort(-q[iu], kind="stable")] > 0
    if not ranked.any():
        return 1.0
    sizes = np.arange(1, ranked.size + 1)
    return float(np.max(2 * np.cumsum(ranked) / (sizes + ranked.sum())))


def _compact(scores: Mapping[str, float]) -> dict[str, float]:
    return {k: float(scores[k]) for k in ("f1", "shd", "nshd", "shd_cpdag")}


def score_directed(models: Mapping[str, DirectedModel | AviciModel
                                   | Sequence[DirectedModel | AviciModel]],
                   keys: Sequence[InstanceKey], salt: str | None = None,
                   rules: Sequence[tuple[str, str]] = (("f1", "dag"), ("shd", "dag")),
                   tta: int = 4, bca: Mapping[str, str] | None = None,
                   references: bool = True, first_model: GridModel | None = None,
                   blends: Sequence[float] = (),
                   progress: Callable[[str], None] | None = None) -> list[DirectedScore]:
    """Every model decoded by every (skeleton, orient) rule, and the references, per key.
    An arm is named ``model:skeleton-orient`` (e.g. ``full:f1-dag``); a sequence of models
    under one label is a seed ensemble (their probabilities averaged). With ``first_model``,
    the first amortized model's unguided graph (its expected-F1 selection, PC-KCI's
    orientations, target none) is the arm ``v1``, and each model's orientation of v1's
    skeleton the arm ``model:v1-skeleton``; each weight w of ``blends`` adds the arm
    ``model:blend-w`` — the expected-F1 selection from w · P₁(adjacent) + (1 − w) · the
    model's P(adjacent), oriented by the model — and its ranking's best cut."""
    if blends and first_model is None:
        raise HeuresisError("a blended skeleton needs the first model (first_model)")
    blends = [check_blend_weight(weight) for weight in blends]  # before any instance is scored
    bca = dict(bca) if bca is not None else bca_choices(BCA_FILE)
    out = []
    for count, key in enumerate(keys, 1):
        instance = cached_instance(key, salt)
        truth_graph = instance.record.require_graph("scoring")
        truth = truth_graph.skeleton()
        names = instance.names
        record = DirectedScore(key.family, key.split, key.index, instance.d)
        first_skeleton = first_q = None
        if first_model is not None:
            grid = evidence_grid(instance.X, names, instance.sha256)
            first_q = first_model.probabilities(grid.pairs, grid.nodes)
            plan = AmortizedPolicy(first_model).plan(grid, first_q)
            first_graph = graph_from_edge_lines(names, plan[0]["args"]["edges"])
            first_skeleton = first_graph.skeleton().astype(bool)
            record.scores["v1"] = _compact(score_graph(first_graph, truth_graph))
        best = {}
        for label, model in models.items():
            members = tuple(model) if isinstance(model, Sequence) else (model,)
            p = ensemble_probabilities(members, instance.X, names, instance.sha256, tta=tta)
            exclusive = isinstance(members[0], DirectedModel)
            adjacent = adjacency_probabilities(p, exclusive)
            best[label] = _best_cut(adjacent, truth)
            for skeleton, orient in rules:
                decoded = decode(p, skeleton, orient, exclusive=exclusive)
                record.scores[f"{label}:{skeleton}-{orient}"] = _compact(
                    score_graph(decoded.graph(names), truth_graph))
            if first_skeleton is not None:  # the first model's adjacency, this model's arrows
                decoded = decode(p, exclusive=exclusive, given=first_skeleton)
                record.scores[f"{label}:v1-skeleton"] = _compact(
                    score_graph(decoded.graph(names), truth_graph))
            for weight in blends:
                assert first_q is not None
                q = blend_adjacency(first_q, adjacent, weight)
                decoded = decode(p, exclusive=exclusive, given=select_edges(q)[0])
                record.scores[f"{label}:blend-{weight:g}"] = _compact(
                    score_graph(decoded.graph(names), truth_graph))
                record.scores[f"{label}:blend-{weight:g}:best-cut"] = {
                    "f1": _best_cut(q, truth)}
        record.best_cut = best.get(next(iter(models)), float("nan")) if models else float("nan")
        for label, value in best.items():
            record.scores.setdefault(f"{label}:best-cut", {})["f1"] = value
        if references:
            start = guided_start(instance.X, names, instance.sha256)
            record.scores["pc-kci"] = _compact(score_graph(start.graph, truth_graph))
            algorithm = bca.get(key.family, "pc-kci")
            record.bca_algorithm = algorithm
            if algorithm == "pc-kci":
                reference = start.graph
            else:
                result = cached_run_algorithm(algorithm, instance.X, names, instance.sha256, {},
                                              None, int31_seed(instance.sha256))
                reference = result.full_graph(names) if result.ok else Graph.empty(names)
            record.scores["bca"] = _compact(score_graph(reference, truth_graph))
            boss = cached_run_algorithm("boss", instance.X, names, instance.sha256, {}, None,
                                        int31_seed(instance.sha256))
            record.scores["boss"] = _compact(score_graph(
                boss.full_graph(names) if boss.ok else Graph.empty(names), truth_graph))
            oracle = start.graph.copy()
            missing = np.triu((truth > 0) & (start.graph.skeleton() == 0), 1)
            for i, j in zip(*np.nonzero(missing), strict=True):
                oracle.add_undirected(names[i], names[j])
            record.scores["oracle"] = _compact(score_graph(oracle, truth_graph))
        out.append(record)
        if progress is not None and (count % 20 == 0 or count == len(keys)):
            progress(f"{count} of {len(keys)} instances scored")
    return out


#: the arms every studied arm is compared with (the first model, ``v1``, when it was scored)
STUDY_REFERENCES = ("pc-kci", "bca", "boss", "v1")


def summarize_directed(records: Sequence[DirectedScore], arms: Sequence[str],
                       references: Sequence[str] = STUDY_REFERENCES,
                       seed: int = 0,
                       n_resamples: int = 10_000) -> dict[str, Any]:
    """Per family and over all: each arm's mean F1 and nSHD, and its paired differences with
    each reference (95% bootstrap intervals, one seed); the first model (``v1``) is one more
    reference when it was scored. An instance is counted once: records of the same instance
    (family, split, index) twice are refused."""
    seen: set[tuple[str, str, int]] = set()
    for record in records:
        key = (record.family, record.split, record.index)
        if key in seen:
            raise HeuresisError(f"instance {key} is scored twice in these records")
        seen.add(key)
    groups: dict[str, list[DirectedScore]] = {}
    for record in records:
        groups.setdefault(record.family, []).append(record)
    groups["all"] = list(records)
    summary: dict[str, Any] = {}
    for family, members in groups.items():
        row: dict[str, Any] = {"n": len(members)}
        for arm in sorted({name for m in members for name in m.scores}):
            present = [m for m in members if arm in m.scores]
            if not present:
                continue
            row[arm] = {metric: float(np.mean([m.scores[arm][metric] for m in present]))
                        for metric in present[0].scores[arm]}
        for arm in arms:
            for reference in references:
                for metric in ("f1", "nshd"):
                    pairs = [(m.scores[arm].get(metric), m.scores[reference].get(metric))
                             for m in members if arm in m.scores and reference in m.scores]
                    pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
                    if not pairs:
                        continue
                    a, b = (np.array(v, dtype=float) for v in zip(*pairs, strict=True))
                    result = paired_bootstrap(a, b, n_resamples=n_resamples, seed=seed)
                    row.setdefault("delta", {})[f"{arm} - {reference} {metric}"] = {
                        "mean": result.mean, "low": result.low, "high": result.high}
        summary[family] = row
    return summary


def write_records(records: Sequence[DirectedScore], path: str | Path) -> None:
    Path(path).write_text(json.dumps([asdict(r) for r in records], indent=0) + "\n",
                          encoding="utf-8")


def read_records(paths: Sequence[str | Path]) -> list[DirectedScore]:
    """The records ``write_records`` wrote, from one or more files (e.g. one per family group
    run in parallel), checked: a file that is not a list of records is a one-line error."""
    out = []
    for path in paths:
        try:
            items = json.loads(Path(path).read_text(encoding="utf-8"))
            out += [DirectedScore(**item) for item in items]
        except (OSError, ValueError, TypeError) as exc:
            raise HeuresisError(f"{path}: not a study's records ({exc})") from None
    return out
