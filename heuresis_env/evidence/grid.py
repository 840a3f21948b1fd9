"""The evidence grid: cheap per-pair and per-node evidence of a whole instance, for models
trained on thousands of instances.

The repair table (:mod:`.repair`) reads 2–10 s of CPU per instance at d = 10, n = 600 beside
PC-KCI; a model trained on thousands of simulated instances needs something cheaper that
still covers every pair. The grid holds, for every *ordered* pair (i, j) — cell ``[i, j]`` —
the features of :data:`GRID_PAIR_FEATURES` (symmetric ones are equal in both cells), and for
every variable the features of :data:`GRID_NODE_FEATURES`. Everything is computed from the
data alone; the hidden record is never read. Each feature is declared once, in the block of
:data:`GRID_BLOCKS` that computes it (:mod:`.features`), with its column in the text table
when it has one; the channel order is the blocks' order, with the node channels kept in the
order the shipped amortized model reads (:data:`SHIPPED_NODE_ORDER`).

- **Correlations**: |Pearson r|, |partial r| given all other columns (the precision matrix),
  the same on the columns' normal scores (rank-based, invariant under monotone maps).
- **Fisher-z screen**: −log10 of the largest Fisher-z p-value over every conditioning set of
  at most one and at most two other variables (on the data and on its normal scores) — a
  pair dependent at every such set is a likely edge; through the one CI-test interface.
- **PC-Fisher-z and PC-KCI** (α = 0.05): kept or not, the level and −log10 p of the deletion,
  and for PC-KCI (the guided start) also −log10 of KCI's marginal p-value, of the largest
  p-value over every set PC tested the pair at, the number of those sets, and whether the
  CPDAG orients j → i (an arrowhead at i; cell [i, j]). KCI's tests are PC's own, read back from its cache.
- **Score-based searches**: adjacency in the outputs of BOSS, GRaSP and GES (BIC), default
  parameters and the instance seed — the ``run_algorithm`` tool's cached runs.
- **Regressions** on normal scores (additive ridge on each input and
  :data:`GRID_FOURIER_FEATURES` random Fourier features of it, penalty by generalised
  cross-validation): the Gaussian log-likelihood gain (nats per row) of adding i to j's
  regression on nothing (a nonlinear marginal dependence), on every other variable (a
  nonlinear Markov-blanket test), on j's PC-KCI neighbours, and on PC-KCI's deleting set.
- **Per node**: linear and nonlinear R² from every other column, skewness, excess kurtosis,
  and the degrees in PC-KCI's and PC-Fisher-z's outputs (÷ (d − 1)).

Cost at d = 10, n = 600: well under a second of CPU beside PC-KCI, which the guided
condition computes anyway (:func:`grid_costs`, docs/amortized.md). Missing entries (a pair PC
kept has no deletion p-value; a failed algorithm has no adjacency) are 0 with the ``kept``
flags and ``*_ran`` node columns telling them apart.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from heuresis_env.discovery.algorithms import cached_run_algorithm
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.discovery.citests.rcit import fourier_features, median_bandwidth
from heuresis_env.discovery.pc import pc
from heuresis_env.discovery.regression import ridge_gcv_noise_variance
from heuresis_env.errors import DataError, HeuresisError
from heuresis_env.evidence.features import (
    EvidenceContext,
    FeatureBlock,
    FeatureGrid,
    GridFeature,
    GridLayout,
    TableRow,
    TextColumn,
    node_features,
    pair_features,
    run_blocks,
    stack,
)
from heuresis_env.evidence.start import ALPHA, GUIDED_TEST, GuidedStart, guided_start
from heuresis_env.evidence.store import cached_evidence
from heuresis_env.graphs import EdgeMark
from heuresis_env.seeding import instance_rng, int31_seed

#: bump when any grid computation changes (enters the cache key)
GRID_EVIDENCE_VERSION = 1
#: random Fourier features per input in the grid's regressions (besides the input itself)
GRID_FOURIER_FEATURES = 5
#: score-based searches whose adjacency is a grid feature (cheap at d = 10)
GRID_ALGORITHMS = ("boss", "grasp", "ges")
#: −log10 p-values are capped here (p below 1e-30 carries no more information)
LOG_P_CAP = 30.0


def _log_p(p: float) -> float:
    if not math.isfinite(p):
        return 0.0
    return min(-math.log10(max(p, 10.0 ** -LOG_P_CAP)), LOG_P_CAP)


def _partial_correlations(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(|r|, |partial r given all others|), each d × d with a zero diagonal."""
    correlation = np.corrcoef(data, rowvar=False)
    precision = np.linalg.pinv(correlation)
    scale = np.sqrt(np.clip(np.diag(precision), 1e-12, None))
    partial = -precision / np.outer(scale, scale)
    for matrix in (correlation, partial):
        np.fill_diagonal(matrix, 0.0)
    return np.abs(correlation), np.clip(np.abs(partial), 0.0, 1.0)


def _fisherz_screen(data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """−log10 Fisher-z p at ∅ and of the largest p over |S| ≤ 1 and |S| ≤ 2, per pair."""
    test = make_ci_test("fisherz", data)
    d = data.shape[1]
    empty, max1, max2 = (np.zeros((d, d)) for _ in range(3))
    for i, j in itertools.combinations(range(d), 2):
        others = [k for k in range(d) if k not in (i, j)]
        largest = [math.nan] * 3  # the largest p at level 0, over levels <= 1, <= 2
        for size in range(3):
            for s in itertools.combinations(others, size):
                try:
                    p = test.test(i, j, s).p_value
                except DataError:  # a singular set tells nothing
                    continue
                for level in range(size, 3):
                    largest[level] = p if math.isnan(largest[level]) else max(largest[level], p)
        empty[i, j], max1[i, j], max2[i, j] = (_log_p(p) for p in largest)
    return empty + empty.T, max1 + max1.T, max2 + max2.T


def _pc_columns(deletions, skeleton: np.ndarray, column: dict[str, int]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """(kept, level, −log10 p) matrices of a PC run and each deleted pair's set."""
    d = skeleton.shape[0]
    level, log_p = np.zeros((d, d)), np.zeros((d, d))
    sets = {}
    for deletion in deletions:
        i, j = column[deletion.x], column[deletion.y]
        level[i, j] = level[j, i] = deletion.level
        log_p[i, j] = log_p[j, i] = _log_p(deletion.p_value)
        sets[(min(i, j), max(i, j))] = tuple(sorted(column[v]
                                                    for v in deletion.conditioning_set))
    return skeleton.astype(np.float64), level, log_p, sets


class _BlockRegressions:
    """Additive ridge regressions of normal-scored columns on blocks of inputs, every fit a
    sub-block of one Gram matrix (:func:`ridge_gcv_noise_variance`)."""

    def __init__(self, scores: np.ndarray, rng: np.random.Generator):
        self.n, d = scores.shape
        seed = int(rng.integers(0, 2**31 - 1))
        blocks = []
        for v in range(d):
            alone = scores[:, [v]]
            random = np.random.default_rng([seed, v])
            blocks += [alone, fourier_features(alone, GRID_FOURIER_FEATURES,
                                               median_bandwidth(alone), random)]
        self.columns = [np.arange(v * (1 + GRID_FOURIER_FEATURES),
                                  (v + 1) * (1 + GRID_FOURIER_FEATURES)) for v in range(d)]
        design = np.hstack(blocks)
        self.design = design = design - design.mean(axis=0)
        self.gram = design.T @ design
        self.centred = centred = scores - scores.mean(axis=0)
        self.cross = design.T @ centred  # (features, d)
        self.totals = np.einsum("ij,ij->j", centred, centred)
        self.base_variance = self.totals / max(self.n - 1, 1)

    def variance(self, target: int, inputs: Sequence[int]) -> float:
        inputs = [v for v in inputs if v != target]
        if not inputs:
            return float(self.base_variance[target])
        index = np.concatenate([self.columns[v] for v in sorted(inputs)])
        return ridge_gcv_noise_variance(self.gram[np.ix_(index, index)],
                                        self.cross[index, target],
                                        float(self.totals[target]), self.n)

    def gain(self, target: int, inputs: Sequence[int], added: int) -> float:
        """Gaussian log-likelihood gain per row of adding ``added`` to ``inputs``."""
        base = [v for v in inputs if v not in (added, target)]
        return 0.5 * math.log(self.variance(target, base)
                              / self.variance(target, [*base, added]))


@dataclass
class _GridContext(EvidenceContext):
    """What the grid's blocks share: the data and values derived once (the guided start, its
    PC columns, the algorithms' seconds)."""

    given: GuidedStart | None
    alpha: float

    @property
    def guided(self) -> GuidedStart:
        return self.once("guided", lambda: self.given if self.given is not None
                         else guided_start(self.data, self.names, self.sha256, self.alpha))

    @property
    def pc_kci(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """(kept, level, −log10 p, each deleted pair's set) of the guided start."""
        return self.once("pc_kci", lambda: _pc_columns(
            self.guided.deletion_log, self.guided.graph.skeleton(), self.column))


def _correlations(c: _GridContext) -> dict[str, np.ndarray]:
    abs_r, abs_partial = _partial_correlations(c.data)
    rank_r, rank_partial = _partial_correlations(c.scores)
    precision_diagonal = np.diag(np.linalg.pinv(np.corrcoef(c.data, rowvar=False)))
    centred = c.data - c.data.mean(axis=0)
    spread = centred.std(axis=0)
    spread[spread == 0] = 1.0
    return {"abs_r": abs_r, "abs_partial_r": abs_partial, "abs_rank_r": rank_r,
            "abs_rank_partial_r": rank_partial,
            "r2_linear": np.clip(1.0 - 1.0 / np.maximum(precision_diagonal, 1e-12), 0.0, 1.0),
            "skewness": np.mean((centred / spread) ** 3, axis=0),
            "excess_kurtosis": np.mean((centred / spread) ** 4, axis=0) - 3.0}


def _screen(c: _GridContext) -> dict[str, np.ndarray]:
    empty, max1, max2 = _fisherz_screen(c.data)
    return {"fz_logp_empty": empty, "fz_logp_max1": max1, "fz_logp_max2": max2,
            "rank_fz_logp_max2": _fisherz_screen(c.scores)[2]}


def _pc_fisherz(c: _GridContext) -> dict[str, np.ndarray]:
    run = pc(c.data, c.names, ci_test="fisherz", alpha=c.alpha)
    kept, level, log_p, _ = _pc_columns(run.deletion_log, run.skeleton.skeleton(), c.column)
    return {"pc_fz_kept": kept, "pc_fz_level": level, "pc_fz_logp": log_p,
            "pc_fz_degree": kept.sum(axis=1) / max(c.d - 1, 1)}


def _pc_kci(c: _GridContext) -> dict[str, np.ndarray]:
    d, guided = c.d, c.guided
    skeleton = guided.graph.skeleton()
    kept, level, log_p, _ = c.pc_kci
    marks = guided.graph.marks
    # PC's own kernel tests, read back from the KCI cache (a rerun asks for the same tests;
    # the guided start's test: exact KCI up to 2,000 rows, the approximation above)
    kci = make_ci_test(GUIDED_TEST, c.data)
    rerun = pc(None, c.names, ci_test=kci, alpha=guided.alpha)
    if not np.array_equal(rerun.skeleton.skeleton(), skeleton):
        raise HeuresisError("PC-KCI rerun on the grid's KCI test differs from the guided "
                            "start (a stale evidence cache?)")
    tested: dict[tuple[int, int], list[float]] = {}
    for answer in kci.results():
        tested.setdefault((answer.x, answer.y), []).append(answer.p_value)
    kci_empty, kci_max, kci_count = (np.zeros((d, d)) for _ in range(3))
    for (i, j), values in tested.items():
        kci_empty[i, j] = kci_empty[j, i] = _log_p(kci.test(i, j, ()).p_value)
        kci_max[i, j] = kci_max[j, i] = _log_p(max(values))
        kci_count[i, j] = kci_count[j, i] = math.log1p(len(values))
    return {"pc_kci_kept": kept, "pc_kci_level": level, "pc_kci_logp": log_p,
            "kci_logp_empty": kci_empty, "kci_logp_max": kci_max, "kci_tests": kci_count,
            # [i, j] = 1 for j → i (the arrowhead at i): the transpose of the directed adjacency
            "pc_kci_arrow": ((marks.T == EdgeMark.TAIL) & (marks == EdgeMark.ARROW)
                             & skeleton.astype(bool)).astype(np.float64).T,
            "pc_kci_degree": kept.sum(axis=1) / max(d - 1, 1)}


def _algorithms(c: _GridContext) -> dict[str, np.ndarray]:
    out = {}
    seconds = c.once("algorithm_seconds", dict)
    for algorithm in GRID_ALGORITHMS:
        result = cached_run_algorithm(algorithm, c.data, c.names, c.sha256, {}, None,
                                      int31_seed(c.sha256))
        seconds[algorithm] = float(result.runtime_seconds)
        graph = result.full_graph(c.names) if result.ok else None
        out[f"{algorithm}_adj"] = (graph.skeleton().astype(np.float64) if graph is not None
                                   else np.zeros((c.d, c.d)))
        out[f"{algorithm}_ran"] = np.full(c.d, 1.0 if graph is not None else 0.0)
    return out


def _regressions(c: _GridContext) -> dict[str, np.ndarray]:
    d = c.d
    skeleton = c.guided.graph.skeleton()
    sepsets = c.pc_kci[3]
    regressions = _BlockRegressions(c.scores, instance_rng(c.sha256, "evidence-grid"))
    gains = {name: np.zeros((d, d)) for name in ("alone", "all", "neighbours", "sepset")}
    r2 = np.zeros(d)
    everyone = list(range(d))
    for j in range(d):
        full = regressions.variance(j, everyone)
        r2[j] = max(0.0, 1.0 - full / regressions.base_variance[j])
        neighbours = np.flatnonzero(skeleton[j]).tolist()
        for i in range(d):
            if i == j:
                continue
            gains["alone"][i, j] = regressions.gain(j, [], i)
            others = [v for v in everyone if v not in (i, j)]
            gains["all"][i, j] = 0.5 * math.log(regressions.variance(j, others) / full)
            gains["neighbours"][i, j] = regressions.gain(j, neighbours, i)
            sepset = sepsets.get((min(i, j), max(i, j)))
            if sepset is not None:
                gains["sepset"][i, j] = regressions.gain(j, list(sepset), i)
    return {**{f"gain_{name}": matrix for name, matrix in gains.items()}, "r2_nonlinear": r2}


def _flag(value: float, row: TableRow) -> str:
    return "y" if value > 0.5 else "n"


def _count(value: float, row: TableRow) -> int:
    return int(value)


def _degree(value: float, row: TableRow) -> int:
    """A degree ÷ (d − 1) back to the degree."""
    return round(value * max(row.owner.d - 1, 1))


def _f(name: str, symmetric: bool, description: str, header: str | None = None,
       cell: str = "", show: Callable[[float, TableRow], Any] | None = None) -> GridFeature:
    """A feature; with a header, a column of the text table (its cell formats ``show`` of
    the value, the value itself by default)."""
    if header is None:
        return GridFeature(name, symmetric, description)
    column = TextColumn(header, cell) if show is None else TextColumn(header, cell, show)
    return GridFeature(name, symmetric, description, column)


_SPELLED = {"boss": "BOSS", "grasp": "GRaSP", "ges": "GES"}


#: the blocks, in computation order; their pair features are the grid's channels in order
GRID_BLOCKS: tuple[FeatureBlock, ...] = (
    FeatureBlock("correlations", (
        _f("abs_r", True, "|Pearson r|", "          |r|", " {:4.2f}"),
        _f("abs_partial_r", True, "|partial r| given every other column", "  pcor",
           "  {:4.2f}"),
        _f("abs_rank_r", True, "|Pearson r| of the normal scores"),
        _f("abs_rank_partial_r", True, "|partial r| of the normal scores given all others",
           "  rpcor", "  {:4.2f}"),
    ), (
        _f("r2_linear", False, "linear R^2 from every other column", " R2lin", " {:5.2f}"),
        _f("skewness", False, "sample skewness", "  skew", " {:+6.2f}"),
        _f("excess_kurtosis", False, "sample excess kurtosis", "   exkurt", " {:+7.2f}"),
    ), _correlations),
    FeatureBlock("fisherz_screen", (
        _f("fz_logp_empty", True, "-log10 Fisher-z p at the empty set", " lpFz0", " {:5.1f}"),
        _f("fz_logp_max1", True, "-log10 of the largest Fisher-z p over |S| <= 1"),
        _f("fz_logp_max2", True, "-log10 of the largest Fisher-z p over |S| <= 2", " lpFz2",
           " {:5.1f}"),
        _f("rank_fz_logp_max2", True, "the same on the normal scores", " lpRk2", " {:5.1f}"),
    ), (), _screen),
    FeatureBlock("pc_fisherz", (
        _f("pc_fz_kept", True, "PC-Fisher-z keeps the pair", " pcFz", "    {}", _flag),
        _f("pc_fz_level", True, "|S| of PC-Fisher-z's deletion (0 if kept)"),
        _f("pc_fz_logp", True, "-log10 p of PC-Fisher-z's deletion (0 if kept)"),
    ), (
        _f("pc_fz_degree", False, "degree in PC-Fisher-z's output / (d - 1)", " degFz",
           " {:5d}", _degree),
    ), _pc_fisherz),
    FeatureBlock("pc_kci_read", (
        _f("pc_kci_kept", True, "PC-KCI keeps the pair (the guided start)", " pcKci",
           "     {}", _flag),
        _f("pc_kci_level", True, "|S| of PC-KCI's deletion (0 if kept)", " lvl", "  {:2d}",
           _count),
        _f("pc_kci_logp", True, "-log10 p of PC-KCI's deletion (0 if kept)", " lpDel",
           " {:5.2f}"),
        _f("kci_logp_empty", True, "-log10 KCI p at the empty set", " lpKci0", " {:6.1f}"),
        _f("kci_logp_max", True, "-log10 of the largest KCI p over the sets PC tested",
           " lpKciMx", " {:7.2f}"),
        _f("kci_tests", True, "log(1 + number of sets PC-KCI tested the pair at)"),
        # (cell [i, j] is 1 when the arrowhead is at i: the CPDAG has j -> i; the feature was
        # computed so in GRID_EVIDENCE_VERSION 1, and the shipped model reads it so)
        _f("pc_kci_arrow", False, "PC-KCI's CPDAG orients j -> i (arrowhead at i)"),
    ), (
        _f("pc_kci_degree", False, "degree in PC-KCI's output / (d - 1)", "  degKci",
           " {:6d}", _degree),
    ), _pc_kci),
    FeatureBlock("algorithms", tuple(
        _f(f"{a}_adj", True, f"{_SPELLED.get(a, a.upper())}'s output has the pair adjacent",
           f" {a}", " " * len(a) + "{}", _flag)
        for a in GRID_ALGORITHMS), tuple(
        _f(f"{a}_ran", False, f"{a.upper()} ran (its adjacency columns are valid)")
        for a in GRID_ALGORITHMS), _algorithms),
    FeatureBlock("regressions", (
        _f("gain_alone", False, "log-likelihood gain of i predicting j alone",
           "  gAlone(->,<-)", "  {:+.3f},{:+.3f}"),
        _f("gain_all", False, "gain of adding i to j's regression on all others",
           "  gAll(->,<-)", " {:+.3f},{:+.3f}"),
        _f("gain_neighbours", False, "gain of adding i given j's PC-KCI neighbours",
           "   gNbr(->,<-)", " {:+.3f},{:+.3f}"),
        _f("gain_sepset", False, "gain of adding i given PC-KCI's deleting set (0 if kept)"),
    ), (
        _f("r2_nonlinear", False, "1 - noise variance of the additive regression on every "
           "other column (normal scores)", "  R2nonlin", "  {:8.2f}"),
    ), _regressions),
)
#: the node channels' order the shipped amortized model reads (agents/data/amortized*/); a
#: new node feature follows them, in block order
SHIPPED_NODE_ORDER = ("r2_linear", "r2_nonlinear", "skewness", "excess_kurtosis",
                      "pc_kci_degree", "pc_fz_degree", *(f"{a}_ran" for a in GRID_ALGORITHMS))
#: the features of cell [i, j], in channel order
GRID_PAIR_FEATURES: tuple[GridFeature, ...] = pair_features(GRID_BLOCKS)
#: the features of each variable, in column order
GRID_NODE_FEATURES: tuple[GridFeature, ...] = node_features(GRID_BLOCKS, SHIPPED_NODE_ORDER)
GRID_PAIR_FEATURE_NAMES = tuple(f.name for f in GRID_PAIR_FEATURES)
GRID_NODE_FEATURE_NAMES = tuple(f.name for f in GRID_NODE_FEATURES)


@dataclass(frozen=True)
class EvidenceGrid(FeatureGrid):
    """One instance's evidence grid: ``pairs[i, j, c]`` is feature c of the ordered pair
    (i, j) (the diagonal is 0), ``nodes[i, c]`` feature c of variable i; ``seconds`` the CPU
    seconds of each part (PC-KCI's own run is the guided start's, not counted here)."""

    settings: dict[str, Any] = field(default_factory=dict)

    PAIR_FEATURES: ClassVar[tuple[GridFeature, ...]] = GRID_PAIR_FEATURES
    NODE_FEATURES: ClassVar[tuple[GridFeature, ...]] = GRID_NODE_FEATURES
    #: the pair section's rows are labelled in 12 characters, the variables' in 9; the
    #: features without a column are not shown
    LAYOUT: ClassVar[GridLayout] = GridLayout("pair", "{:<12}", "variable ", "{:<9}")

    def rows(self) -> list[dict[str, Any]]:
        """One JSON-ready row per unordered pair {i, j} (i < j): symmetric features once,
        ordered ones for both directions (``name`` is i → j, ``name_rev`` j → i)."""
        out = []
        for i, j in itertools.combinations(range(self.d), 2):
            row: dict[str, Any] = {"pair": [self.names[i], self.names[j]]}
            for c, feature in enumerate(GRID_PAIR_FEATURES):
                row[feature.name] = float(self.pairs[i, j, c])
                if not feature.symmetric:
                    row[f"{feature.name}_rev"] = float(self.pairs[j, i, c])
            out.append(row)
        return out

    def node_rows(self) -> list[dict[str, Any]]:
        """One JSON-ready row per variable, in column order."""
        return [{"variable": name, **{f: float(v) for f, v in
                                      zip(GRID_NODE_FEATURE_NAMES, self.nodes[k], strict=True)}}
                for k, name in enumerate(self.names)]

    @classmethod
    def from_rows(cls, rows: Sequence[dict[str, Any]], node_rows: Sequence[dict[str, Any]],
                  sha256: str = "") -> EvidenceGrid:
        """The grid back from :meth:`rows` and :meth:`node_rows` (what the ``evidence_grid``
        tool returns as data): the same float32 values bit for bit. Raises on a missing or
        unknown variable, pair or feature."""
        try:
            names = tuple(str(row["variable"]) for row in node_rows)
            column = {name: k for k, name in enumerate(names)}
            d = len(names)
            pairs = np.zeros((d, d, len(GRID_PAIR_FEATURES)), dtype=np.float32)
            seen = set()
            for row in rows:
                i, j = (column[str(v)] for v in row["pair"])
                seen.add((min(i, j), max(i, j)))
                for c, feature in enumerate(GRID_PAIR_FEATURES):
                    pairs[i, j, c] = row[feature.name]
                    pairs[j, i, c] = row[feature.name if feature.symmetric
                                         else f"{feature.name}_rev"]
            nodes = np.array([[row[f] for f in GRID_NODE_FEATURE_NAMES] for row in node_rows],
                             dtype=np.float32).reshape(d, len(GRID_NODE_FEATURES))
        except (KeyError, TypeError, ValueError) as exc:
            raise HeuresisError(f"not an evidence grid's rows: {exc!r}") from None
        if len(seen) != d * (d - 1) // 2:
            raise HeuresisError(f"the grid's rows cover {len(seen)} of the "
                                f"{d * (d - 1) // 2} pairs of {d} variables")
        return cls(names=names, sha256=sha256, pairs=pairs, nodes=nodes)


    def table_text(self) -> str:
        """The grid as text (what the ``evidence_grid`` tool shows): a row per pair with the
        most telling columns — −log10 p-values (lp), flags (y/n), gains (nats per row, both
        directions) — then a row per variable; the columns are the declarations'."""
        return self.text()


def compute_evidence_grid(data: np.ndarray, names: Sequence[str], sha256: str,
                          guided: GuidedStart | None = None,
                          alpha: float = ALPHA) -> EvidenceGrid:
    """Compute one instance's grid (see the module docstring), BLAS on one thread."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _compute(np.asarray(data, dtype=np.float64), tuple(names), sha256, guided, alpha)


def _compute(data: np.ndarray, names: tuple[str, ...], sha256: str,
             guided: GuidedStart | None, alpha: float) -> EvidenceGrid:
    n, d = data.shape
    if d < 2:
        raise HeuresisError(f"the evidence grid needs at least 2 variables, got {d}")
    context = _GridContext(data, names, sha256, guided, alpha)
    computed = run_blocks(GRID_BLOCKS, context, "evidence grid")
    pairs = stack(computed.values, GRID_PAIR_FEATURES, (d, d))
    for k in range(d):
        pairs[k, k, :] = 0.0
    guided = context.guided
    return EvidenceGrid(
        names=names, sha256=sha256, pairs=pairs.astype(np.float32),
        nodes=stack(computed.values, GRID_NODE_FEATURES, (d,)).astype(np.float32),
        seconds=computed.cpu_seconds,
        settings={"version": GRID_EVIDENCE_VERSION, "alpha": guided.alpha, "n": n, "d": d,
                  "algorithms": list(GRID_ALGORITHMS),
                  "algorithm_seconds": context.once("algorithm_seconds", dict),
                  "guided_start_seconds": float(guided.runtime),
                  "fourier_features": GRID_FOURIER_FEATURES})


def evidence_grid(data: np.ndarray, names: Sequence[str], sha256: str,
                  alpha: float = ALPHA) -> EvidenceGrid:
    """The cached evidence grid of an instance (computed once per instance)."""
    guided = guided_start(data, names, sha256, alpha)
    return cached_evidence(sha256, "evidence_grid",
                           {"version": GRID_EVIDENCE_VERSION, "alpha": alpha,
                            "names": list(names)},
                           lambda: compute_evidence_grid(data, names, sha256, guided, alpha))
