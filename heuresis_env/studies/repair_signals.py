"""The repair evidence study: how well each repair feature tells PC-KCI's wrong decisions
from its right ones, per family, with instance-clustered bootstrap intervals.

For every pair of every instance studied, :func:`repair_records` joins the repair table
(:mod:`heuresis_env.evidence.repair`) and the RL view's seven pair features
(:mod:`heuresis_env.evidence.pairs`) with the hidden record's answer (is the pair a true
edge?). A *wrong deletion* is a deleted true edge, a *false keep* a kept non-edge. Each
feature's direction — whether a higher value means "more likely a true edge" — is fixed in
advance (:data:`TRUE_EDGE_DIRECTION`), never chosen on the data; the AUC of a feature for
deletions is P(its score for a wrong deletion > for a right one), for keeps P(its score for
a false keep > for a true one) with the direction reversed, both through
:func:`~heuresis_env.studies.deletion_signals.clustered_auc` (instances as clusters).

``python -m heuresis_env.studies.repair_signals --families all --count 10`` computes (or
reads from the cache) the first COUNT development instances of each family and prints the
per-family AUC table and the evidence's cost per instance.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import FEATURE_NAMES, guided_start, pair_evidence
from heuresis_env.evidence.repair import (
    DEFAULT_ALGORITHMS,
    REFERENCE_ALGORITHMS,
    REPAIR_FEATURE_NAMES,
    repair_evidence,
)
from heuresis_env.generation.families import expand_families
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.studies.deletion_signals import AUCResult, clustered_auc

#: for each feature, +1 when a higher value means "more likely a true edge", −1 the reverse
#: (fixed before any AUC was computed: small p-values, large gains, votes, frequencies,
#: dependence measures and larger deleting sets point to an edge)
TRUE_EDGE_DIRECTION: dict[str, int] = {
    "set_size": +1, "kci_p": -1, "kci_p_empty": -1, "kci_p_subsets_min": -1,
    "kci_p_subsets_max": -1, "fisherz_p": -1, "fisherz_p_subsets_min": -1,
    "fisherz_p_subsets_max": -1, "kci_p_narrow": -1, "kci_p_wide": -1, "gcm_p": -1,
    "ll_gain_max": +1, "ll_gain_min": +1,
    **{f"keeps_{a.replace('-', '_')}": +1 for a in REFERENCE_ALGORITHMS},
    "reference_votes": +1, "pc_kci_bootstrap": +1, "common_neighbours": +1,
    "fisherz_deletion_p": -1, "abs_pearson_r": +1, "distance_correlation": +1, "dcor_gap": +1,
    "kci_p_at_deleting_set": -1, "stability": +1,
}
#: the columns of a record's ``values``: the repair table's, then the RL view's pair features
#: (``kci_deletion_p`` is the repair table's ``kci_p`` for deleted pairs, so it is left out)
STUDY_FEATURES = REPAIR_FEATURE_NAMES + tuple(f for f in FEATURE_NAMES if f != "kci_deletion_p")


@dataclass(frozen=True)
class PairRecord:
    """One pair of one instance: PC-KCI's decision, the truth, and every feature."""

    instance: str  # family/split/index
    family: str
    i: int
    j: int
    kept: bool
    true_edge: bool
    values: tuple[float, ...]  # STUDY_FEATURES order

    @property
    def wrong(self) -> bool:
        """PC-KCI's decision on the pair is wrong (a wrong deletion or a false keep)."""
        return self.kept != self.true_edge


@dataclass(frozen=True)
class InstanceCost:
    """Seconds spent on one instance's evidence when it was computed: the guided start and
    pair evidence in wall seconds, the repair table's groups in CPU seconds (one core), each
    reference algorithm's run in wall seconds (recorded with its cached output)."""

    instance: str
    guided_start: float
    pair_evidence: float
    repair: dict[str, float]
    algorithms: dict[str, float]


def repair_records(key: InstanceKey, salt: str | None = None,
                   algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
                   bootstraps: int = 0) -> tuple[list[PairRecord], InstanceCost]:
    """Every pair's record on one instance (reads the hidden record for the truth)."""
    instance = generate_instance(key, salt)
    data, names, sha = instance.X, instance.names, instance.sha256
    seed = guided_start(data, names, sha)
    pairs = pair_evidence(data, names, sha)
    repair = repair_evidence(data, names, sha, algorithms=algorithms, bootstraps=bootstraps)
    if instance.record.dag is None:
        raise HeuresisError(f"{key} has no ground-truth graph; the repair study needs one")
    truth = instance.record.dag.skeleton()
    pair_columns = [FEATURE_NAMES.index(f) for f in STUDY_FEATURES[len(REPAIR_FEATURE_NAMES):]]
    pair_values = pairs.feature_matrix()[:, pair_columns]
    label = f"{key.family}/{key.split}/{key.index}"
    records = []
    for row, (i, j) in enumerate(repair.pairs.tolist()):
        values = tuple(float(v) for v in np.r_[repair.values[row], pair_values[row]])
        records.append(PairRecord(label, key.family, i, j, bool(repair.column("kept")[row]),
                                  bool(truth[i, j]), values))
    cost = InstanceCost(label, float(seed.runtime), float(pairs.runtime), dict(repair.seconds),
                        dict(repair.settings.get("algorithm_seconds", {})))
    return records, cost


@dataclass(frozen=True)
class FeatureAUC:
    """A feature's AUC for wrong deletions and for false keeps, on one group of instances."""

    feature: str
    deletions: AUCResult
    keeps: AUCResult


def feature_aucs(records: Sequence[PairRecord], n_resamples: int = 2000,
                 seed: int = 0) -> list[FeatureAUC]:
    """AUC with its cluster-bootstrap interval for every feature with a fixed direction."""
    deleted = [r for r in records if not r.kept]
    kept = [r for r in records if r.kept]
    out = []
    for position, feature in enumerate(STUDY_FEATURES):
        direction = TRUE_EDGE_DIRECTION.get(feature)
        if direction is None:
            continue
        results = []
        for group, sign in ((deleted, direction), (kept, -direction)):
            scores = np.array([sign * r.values[position] for r in group], dtype=float)
            labels = np.array([r.wrong for r in group], dtype=bool)
            results.append(clustered_auc(scores, labels, [r.instance for r in group],
                                         n_resamples=n_resamples, seed=seed + position))
        out.append(FeatureAUC(feature, *results))
    return out


def auc_table(records: Sequence[PairRecord], families: Sequence[str], which: str = "deletions",
              n_resamples: int = 2000) -> str:
    """A markdown table: one row per feature, one column per family and one for all."""
    groups = {family: [r for r in records if r.family == family] for family in families}
    groups["all"] = list(records)
    results = {name: {a.feature: getattr(a, which) for a in feature_aucs(group, n_resamples)}
               for name, group in groups.items() if group}
    header = "| feature | " + " | ".join(results) + " |"
    lines = [header, "|---" * (len(results) + 1) + "|"]
    counts = []
    for name in results:
        any_result = next(iter(results[name].values()))
        counts.append(f"{any_result.n_positive}/{any_result.n_positive + any_result.n_negative}")
    lines.append("| wrong / all | " + " | ".join(counts) + " |")
    for feature in next(iter(results.values())):
        cells = []
        for name in results:
            auc = results[name][feature]
            cells.append("–" if math.isnan(auc.auc) else
                         f"{auc.auc:.2f} [{auc.low:.2f}, {auc.high:.2f}]")
        lines.append(f"| {feature} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cost_table(costs: Sequence[InstanceCost]) -> str:
    """Mean, median and maximum seconds per instance of each evidence part."""
    parts: dict[str, list[float]] = {
        "guided start (PC-KCI, wall)": [c.guided_start for c in costs],
        "pair evidence (layout 1, wall)": [c.pair_evidence for c in costs]}
    for cost in costs:
        for group, seconds in cost.repair.items():
            if group != "algorithms":  # read from the cache: their runs are listed below
                parts.setdefault(f"repair: {group} (CPU)", []).append(seconds)
    for cost in costs:
        for algorithm, seconds in cost.algorithms.items():
            parts.setdefault(f"repair: {algorithm} run (wall)", []).append(seconds)
    parts["repair: total without the algorithms (CPU)"] = [
        sum(v for k, v in c.repair.items() if k != "algorithms") for c in costs]
    parts["repair: total with the algorithms"] = [
        sum(v for k, v in c.repair.items() if k != "algorithms") + sum(c.algorithms.values())
        for c in costs]
    lines = ["| part | mean s | median s | max s |", "|---|---|---|---|"]
    for name, values in parts.items():
        lines.append(f"| {name} | {np.mean(values):.2f} | {np.median(values):.2f} | "
                     f"{np.max(values):.2f} |")
    return "\n".join(lines)


def study(families: Iterable[str], indices: Iterable[int], split: str = "dev",
          salt: str | None = None, progress=None, d: int = 10, n: int = 600,
          **options) -> tuple[list[PairRecord], list[InstanceCost]]:
    """Records and costs of ``indices`` of every family (instances interleaved by index)."""
    records, costs = [], []
    families = list(families)
    for index in indices:
        for family in families:
            started = time.perf_counter()
            key = InstanceKey(family, split, int(index), d=d, n=n)
            found, cost = repair_records(key, salt, **options)
            records += found
            costs.append(cost)
            if progress is not None:
                progress(f"{cost.instance}: {time.perf_counter() - started:.1f} s")
    return records, costs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="all")
    parser.add_argument("--count", type=int, default=10, help="instances per family")
    parser.add_argument("--start", type=int, default=0, help="first instance index")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--bootstraps", type=int, default=0)
    parser.add_argument("--algorithms", default=",".join(DEFAULT_ALGORITHMS),
                        help=f"reference algorithms voting (of {', '.join(REFERENCE_ALGORITHMS)})")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--json", help="write the records and costs here")
    args = parser.parse_args(argv)
    families = expand_families(args.families)
    records, costs = study(families, range(args.start, args.start + args.count), args.split,
                           bootstraps=args.bootstraps, algorithms=args.algorithms.split(","),
                           progress=lambda m: print(m, file=sys.stderr, flush=True))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"features": STUDY_FEATURES, "records": [asdict(r) for r in records],
                       "costs": [asdict(c) for c in costs]}, f)
    print("## Wrong deletions (AUC, 95% instance-bootstrap interval)\n")
    print(auc_table(records, families, "deletions", args.resamples))
    print("\n## False keeps\n")
    print(auc_table(records, families, "keeps", args.resamples))
    print("\n## Cost per instance\n")
    print(cost_table(costs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
