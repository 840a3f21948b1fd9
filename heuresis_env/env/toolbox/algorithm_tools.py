"""Graph-level tools: reference algorithms (full or partial graphs), bootstrap stability,
pairwise orientation probes, and the guided condition's deletion log and repair table.

``run_algorithm`` is seeded per instance, so the same call returns the same graph in any
episode and its result is cached on disk across episodes and processes; ``stability`` and
``orientation_probe`` draw from the generator of the call (instance seed + call number).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field

from heuresis_env.cache import ResultCache, stable_hash
from heuresis_env.discovery.algorithms import (
    ALGORITHM_CACHE_VERSION,
    AlgorithmResult,
    Interventions,
    available_algorithms,
    cached_run_algorithm,
    get_algorithm,
    run_algorithm,
)
from heuresis_env.discovery.orientation import orientation_probe
from heuresis_env.env.toolbox.graph_tools import GraphName, graph_summary, save_to_memory
from heuresis_env.env.toolbox.registry import (
    NoArgs,
    Params,
    Tool,
    ToolArgs,
    ToolResult,
    VariableList,
    VariableName,
    register_tool,
)
from heuresis_env.env.toolbox.state import EpisodeState
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import (
    REPAIR_FEATURES,
    STATISTICS_NODE_FEATURES,
    STATISTICS_PAIR_FEATURES,
    bootstrap_edge_frequencies,
)
from heuresis_env.seeding import MAX_INT31, int31_seed

#: bump when the stability tool's cached output changes meaning
TOOL_CACHE_VERSION = 1
#: most bootstrap resamples one stability call may run
MAX_BOOTSTRAPS = 200
#: frequencies below this are left out of the stability text (kept in the data)
STABILITY_TEXT_FLOOR = 0.05

_ALGORITHM_HELP = ("a reference algorithm: " + ", ".join(available_algorithms())
                   + " (see the toolbox reference for each one's parameters)")


class RunAlgorithmArgs(ToolArgs):
    name: str = Field(max_length=64, description=_ALGORITHM_HELP)
    params: Params = Field(default_factory=dict,
                           description="parameters overriding the defaults, e.g. {\"alpha\": 0.01}")
    variables: VariableList | None = Field(
        None, description="run on these variables only (a partial graph); default: all")
    save_as: GraphName | None = Field(
        None, description="also save the output graph in the graph memory under this name")


_INTERVENTIONAL_HELP = (
    "a reference algorithm: " + ", ".join(available_algorithms(interventional=True))
    + " (gies and jci-pc read every regime: the observational rows and each experiment's, "
    "knowing its target; see the toolbox reference for each one's parameters)")


class RegimeRunAlgorithmArgs(RunAlgorithmArgs):
    """run_algorithm's arguments in an episode with an experiment budget."""

    name: str = Field(max_length=64, description=_INTERVENTIONAL_HELP)
    data: Literal["pooled", "observational"] = Field("pooled", description=(
        "which rows: \"pooled\" (every row: gies and jci-pc read each row's regime, the "
        "other algorithms read the rows as one table) or \"observational\" (the original "
        "table only)"))


class StabilityArgs(ToolArgs):
    name: str = Field("pc-fisherz", max_length=64, description=_ALGORITHM_HELP)
    n_boot: int = Field(20, ge=1, le=MAX_BOOTSTRAPS, description="bootstrap resamples")
    frac: float = Field(1.0, gt=0, le=1,
                        description="resample size as a fraction of n (rows drawn with "
                                    "replacement)")
    params: Params = Field(default_factory=dict, description="the algorithm's parameters")
    variables: VariableList | None = Field(None, description="a subset of variables")


class PairProbeArgs(ToolArgs):
    x: VariableName
    y: VariableName


class RepairEvidenceArgs(ToolArgs):
    which: Literal["all", "deleted", "kept"] = Field(
        "all", description="the pairs PC-KCI deleted, those it kept, or all pairs")


def _format_params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items()) or "no parameters"


def _regime_run(state: EpisodeState, args: RunAlgorithmArgs, variables: list[str] | None
                ) -> AlgorithmResult | None:
    """The run over every regime's rows (None: the observational table serves), memoized in
    the episode by the algorithm, its parameters, the variables and the regimes so far."""
    regimes = state.regimes
    if regimes is None or getattr(args, "data", "pooled") != "pooled" \
            or regimes.n_experiments == 0:
        return None
    key = ("run_algorithm", args.name, stable_hash(dict(args.params)), str(variables),
           regimes.n_experiments)
    result = regimes.memo.get(key)
    if result is None:
        rows, labels = regimes.pooled()
        interventions = Interventions(labels, tuple(tuple(t) for t in regimes.intervened()))
        result = run_algorithm(args.name, rows, state.names, params=dict(args.params),
                               variables=variables, seed=int31_seed(state.sha256),
                               interventions=interventions)
        regimes.memo[key] = result
    return result


def _run_algorithm(state: EpisodeState, args: RunAlgorithmArgs) -> ToolResult:
    spec = get_algorithm(args.name)  # unknown names list the known ones
    if spec.interventional and state.regimes is None:
        raise HeuresisError(f"{args.name} reads experiments, and this episode has none (no "
                            "experiment budget); the algorithms here: "
                            + ", ".join(available_algorithms()))
    variables = None if args.variables is None else list(args.variables)
    if variables is not None:
        state.variables(variables)
    result = _regime_run(state, args, variables)
    if result is None:
        result = cached_run_algorithm(args.name, state.data, state.names, state.sha256,
                                      dict(args.params), variables, int31_seed(state.sha256))
    scope = (f"all {state.d} variables" if variables is None else
             f"{len(variables)} variables ({', '.join(variables)}; a partial graph: the other "
             "variables are left out, so an edge may stand for a path through them)")
    data = {"algorithm": args.name, "params": result.params, "variables": list(result.variables),
            "graph_type": result.graph_type, "runtime_seconds": result.runtime_seconds}
    if state.regimes is not None:
        rows = getattr(args, "data", "pooled")
        data["data_rows"] = rows
        if rows == "pooled" and state.regimes.n_experiments:
            scope += (f", every regime ({state.regimes.n_experiments} experiment(s), "
                      f"{state.regimes.pooled()[0].shape[0]} rows)")
    if not result.ok:
        return ToolResult.failure(f"{args.name} failed on {scope}: {result.error}", data)
    graph = result.full_graph(state.names)
    assert graph is not None  # a result that is ok has a graph
    lines = [f"{args.name} ({_format_params(result.params)}) on {scope} returned a "
             f"{result.graph_type} with {graph_summary(graph)}:", graph.to_text()]
    if args.save_as is not None:
        note = save_to_memory(state, args.save_as, graph)
        lines.append(f"Output {note} in the graph memory as {args.save_as!r}.")
    warnings = result.extras.get("warnings") if isinstance(result.extras, dict) else None
    if warnings:
        lines.append(f"Warnings: {'; '.join(str(w) for w in warnings[:3])}")
    data["graph"] = graph.to_dict()
    return ToolResult(text="\n".join(lines), data=data)


def _stability(state: EpisodeState, args: StabilityArgs) -> ToolResult:

    spec = get_algorithm(args.name)
    params = spec.merged_params(args.params)  # bad parameters fail before any resample
    variables = list(state.names) if args.variables is None else list(args.variables)
    columns = state.variables(variables)
    if len(columns) < 2:
        raise HeuresisError("stability needs at least 2 variables")
    seed = state.call_seed()
    key = stable_hash({"sha256": state.sha256, "algorithm": args.name, "params": params,
                       "variables": variables, "n_boot": args.n_boot, "frac": args.frac,
                       "seed": seed, "version": TOOL_CACHE_VERSION,
                       "algorithms": ALGORITHM_CACHE_VERSION})
    store = ResultCache("tool-stability")
    cached = store.get(key)
    if cached is None:
        rng = np.random.default_rng(seed)
        failures: list[str] = []

        def run(sample: np.ndarray):
            result = run_algorithm(args.name, sample, variables, params=params,
                                   seed=int(rng.integers(0, MAX_INT31)))
            if not result.ok:
                failures.append(str(result.error))
            return result.graph

        adjacency, directed, successes = bootstrap_edge_frequencies(
            state.data[:, columns], args.n_boot, args.frac, rng, run)
        cached = (adjacency, directed, successes, failures[:3])
        store.set(key, cached)
    adjacency, directed, successes, failures = cached
    if successes == 0:
        return ToolResult.failure(f"{args.name} failed on every resample: {failures[0]}")
    rows = []
    k = len(variables)
    for a in range(k):
        for b in range(a + 1, k):
            if adjacency[a, b] >= STABILITY_TEXT_FLOOR:
                rows.append((adjacency[a, b], a, b))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    lines = [f"Bootstrap stability of {args.name} ({_format_params(params)}): {successes} of "
             f"{args.n_boot} resamples of {max(10, round(args.frac * state.n))} rows "
             "(with replacement) succeeded. Adjacency frequency, then how often each "
             "direction was output:"]
    for frequency, a, b in rows:
        lines.append(f"{variables[a]} - {variables[b]}: {frequency:.2f} "
                     f"({variables[a]} --> {variables[b]} {directed[a, b]:.2f}, "
                     f"{variables[b]} --> {variables[a]} {directed[b, a]:.2f})")
    if not rows:
        lines.append("(no pair adjacent in 5% or more of the resamples)")
    if successes < args.n_boot:
        lines.append(f"{args.n_boot - successes} resamples failed, e.g. {failures[0]}")
    return ToolResult(text="\n".join(lines), data={
        "variables": variables, "adjacency_frequency": np.round(adjacency, 6).tolist(),
        "directed_frequency": np.round(directed, 6).tolist(), "successes": successes})


def _orientation_probe(state: EpisodeState, args: PairProbeArgs) -> ToolResult:

    i, j = state.variable(args.x), state.variable(args.y)
    if i == j:
        raise HeuresisError(f"x and y must differ, got {args.x!r} twice")
    probe = orientation_probe(state.data[:, i], state.data[:, j], state.rng())
    anm, lingam = probe["anm"], probe["pairwise_lingam"]
    x, y = args.x, args.y
    experiments = _experiment_lines(state, x, y)
    if experiments is not None:
        probe = {**probe, "experiments": experiments[1]}

    def named(direction: str | None) -> str:
        if direction is None:
            return "undecided"
        return f"{x} --> {y}" if direction == "x->y" else f"{y} --> {x}"

    text = "\n".join([
        f"Direction evidence for {x} - {y} (bivariate: other variables are ignored, so a "
        f"confounded pair or one with several causes can mislead both probes). Pearson r "
        f"{probe['pearson_r']:+.3f}, n = {probe['n']}.",
        f"Additive-noise model ({anm['regressor']} regression, HSIC test of residual vs "
        f"cause): p-value for {x} --> {y} {anm['p_value_x_to_y']:.4g}, for {y} --> {x} "
        f"{anm['p_value_y_to_x']:.4g} (a larger p-value fits better) -> {named(anm['direction'])}.",
        f"Pairwise LiNGAM likelihood ratio (positive favours {x} --> {y}; about 0 for "
        f"Gaussian data): entropy {lingam['entropy']:+.4f}, tanh {lingam['tanh']:+.4f}, "
        f"skew {lingam['skew']:+.4f} -> {named(lingam['direction'])}.",
        *([] if experiments is None else experiments[0]),
    ])
    return ToolResult(text=text, data=probe)


def _experiment_lines(state: EpisodeState, x: str, y: str
                      ) -> tuple[list[str], list[dict[str, Any]]] | None:
    """What the episode's experiments on x or y say about the direction (None without any):
    a column that responds to an experiment on the other is its descendant."""
    regimes = state.regimes
    if regimes is None or not regimes.n_experiments:
        return None
    lines, records = [], []
    for regime in regimes.regimes[1:]:
        if regime.target not in (x, y):
            continue
        other = y if regime.target == x else x
        response = regimes.responses.get(regime.index, {}).get(other, {})
        if "p_holm" not in response:
            continue
        moved = bool(response["moved"])
        records.append({"regime": regime.index, "target": regime.target, "column": other,
                        "p_holm": response["p_holm"], "moved": moved})
        lines.append(f"Experiment {regime.index}, {regime.describe()}: {other} "
                     f"{'responds' if moved else 'does not respond'} (p_holm "
                     f"{response['p_holm']:.3g}) -> "
                     + (f"{regime.target} is an ancestor of {other}" if moved else
                        f"{other} is not a descendant of {regime.target}"))
    if not lines:
        lines = [f"No experiment on {x} or {y} yet: intervene on one of them for direct "
                 "evidence of the direction."]
    return ["Experiments:", *lines], records


def _deletion_log(state: EpisodeState, args: NoArgs) -> ToolResult:
    seed = state.require_evidence().guided_start()
    log = seed.deletion_log
    n_pairs = state.d * (state.d - 1) // 2
    lines = [f"Deletion log of PC with {seed.ci_test} (alpha = {seed.alpha}), the starting "
             f"graph of this episode: {len(log)} of {n_pairs} pairs deleted after "
             f"{seed.n_tests} tests. PC deletes a pair at the first conditioning set whose "
             "test gives p > alpha, and never revisits it.",
             "order  pair             conditioning set            p-value   statistic"]
    for deletion in log:
        pair = f"{deletion.x} - {deletion.y}"
        given = "{" + ", ".join(deletion.conditioning_set) + "}"
        lines.append(f"{deletion.order:>5}  {pair:<16} {given:<27} {deletion.p_value:>8.4g}"
                     f"  {deletion.statistic:>10.4g}")
    return ToolResult(text="\n".join(lines), data={
        "ci_test": seed.ci_test, "alpha": seed.alpha, "n_tests": seed.n_tests,
        "deletions": [deletion.to_dict() for deletion in log]})


def _repair_evidence(state: EpisodeState, args: RepairEvidenceArgs) -> ToolResult:
    table = state.require_evidence().repair_evidence()
    algorithms = table.settings.get("algorithms", [])
    legend = [
        "Repair evidence for PC-KCI's output (the starting graph): one row per pair, "
        "computed from the data alone. S* is the set at which PC-KCI deleted the pair, or "
        "for a kept pair the set it tested with the largest KCI p-value.",
        "kci_p: KCI p-value at S*; kci{}: at the empty set; kciSmin/kciSmax: smallest/largest "
        "KCI p-value over the subsets of S* (S* and {} included); fz_p, fzSmin, fzSmax: the "
        "same with Fisher-z; kci.5w / kci2w: KCI at S* with half / twice the median-heuristic "
        "kernel width; gcm_p: generalised "
        "covariance measure at S* (cross-fitted nonparametric regressions); llgain+/-: "
        "held-out log-likelihood gain per row of adding the edge, in its better and worse "
        "direction, given PC-KCI's possible parents; votes: fraction of the reference "
        f"algorithms ({', '.join(algorithms)}) that have the pair adjacent, then each one's "
        "y/n; boot: PC-KCI's bootstrap adjacency frequency (- when not computed); cn: common "
        "neighbours in PC-KCI's output.",
        "", table.table_text(args.which)]
    rows = []
    for k, (i, j) in enumerate(table.pairs.tolist()):
        rows.append({"pair": [state.names[i], state.names[j]],
                     "reference_set": [state.names[v] for v in table.reference_sets[k]],
                     **{f.name: (None if np.isnan(v) else float(v))
                        for f, v in zip(REPAIR_FEATURES, table.values[k], strict=True)}})
    if args.which != "all":
        keep = args.which == "kept"
        rows = [r for r in rows if bool(r["kept"]) == keep]
    return ToolResult(text="\n".join(legend), data={"rows": rows, "settings": table.settings})


def _evidence_grid(state: EpisodeState, args: NoArgs) -> ToolResult:
    grid = state.require_evidence().evidence_grid()
    legend = [
        "Evidence grid: cheap evidence about every pair and variable, from the data alone "
        "(what amortized models read). |r|: absolute Pearson correlation; pcor / rpcor: "
        "absolute partial correlation given every other column, on the data / on its normal "
        "scores; lp*: -log10 of a p-value (large = dependent): lpFz0 Fisher-z at the empty "
        "set, lpFz2 / lpRk2 the largest Fisher-z p over every set of at most two others (data / "
        "normal scores); pcFz, pcKci: PC with Fisher-z / KCI keeps the pair (alpha "
        f"{grid.settings.get('alpha')}); lvl, lpDel: the size of PC-KCI's deleting set and its "
        "p-value; lpKci0: KCI at the empty set; lpKciMx: the largest KCI p over the sets PC "
        "tested; boss, grasp, ges: the score-based search keeps the pair; gAlone, gAll, gNbr: "
        "Gaussian log-likelihood gain (nats per row) of adding the first variable to the "
        "second's additive regression (->) and the reverse (<-), given nothing, every other "
        "variable, or the target's PC-KCI neighbours. Variables: linear and nonlinear R^2 from "
        "all others, skewness, excess kurtosis, degrees in PC-KCI's and PC-Fisher-z's output.",
        "", grid.table_text()]
    data = {"rows": grid.rows(), "nodes": grid.node_rows(), "settings": grid.settings}
    regimes = state.regimes
    if regimes is not None and regimes.n_experiments:
        # the grid itself reads the observational table; the experiments come beside it
        responses: list[dict[str, Any]] = []
        for regime in regimes.regimes[1:]:
            moved = [c for c, e in regimes.responses.get(regime.index, {}).items()
                     if e.get("moved")]
            responses.append({"regime": regime.index, "target": regime.target,
                              "value": regime.value, "moved": moved})
            legend.append(f"  {regime.index}: {regime.describe()} moved "
                          f"{', '.join(moved) or 'none'}")
        legend[-len(responses):-len(responses)] = [
            "", "Experiments (the grid above reads the observational rows): the columns that "
            "responded to each, i.e. the target's descendants:"]
        data["experiments"] = responses
    return ToolResult(text="\n".join(legend), data=data)


def _pair_statistics(state: EpisodeState, args: NoArgs) -> ToolResult:
    statistics = state.require_evidence().pair_statistics()
    described = "; ".join(f"{f.name}: {f.description}" + ("" if f.symmetric else " (i->j, j->i)")
                          for f in STATISTICS_PAIR_FEATURES)
    nodes = "; ".join(f"{f.name}: {f.description}" for f in STATISTICS_NODE_FEATURES)
    legend = ("Pair statistics: cheap evidence about every pair and variable at any size, from "
              "the data alone (what the directed amortized model reads beside the rows). "
              "-log10 p-values are capped at 30. Pairs: " + described + ". Variables: " + nodes
              + ".")
    return ToolResult(text=legend + "\n\n" + statistics.table_text(), data={
        "names": list(statistics.names),
        "pair_features": [f.name for f in STATISTICS_PAIR_FEATURES],
        "node_features": [f.name for f in STATISTICS_NODE_FEATURES],
        "pairs": statistics.pairs.tolist(), "nodes": statistics.nodes.tolist()})


register_tool(Tool(
    name="run_algorithm",
    description="Run a reference causal-discovery algorithm (PC with Fisher-z or KCI, GES, "
                "FCI, DirectLiNGAM, ANM, NOTEARS, NOTEARS-MLP, GRaSP, BOSS) on all variables "
                "or on a subset (a partial graph), and show its output graph. The working "
                "graph is not changed; use save_as and load_graph, or edit it yourself.",
    args_model=RunAlgorithmArgs, run=_run_algorithm, category="algorithm",
    writes_memory=True,  # save_as=name stores its output
    experiment_args=RegimeRunAlgorithmArgs))
register_tool(Tool(
    name="stability",
    description="Bootstrap stability of an algorithm: how often each pair is adjacent (and "
                "each direction is output) over resamples of the rows.",
    args_model=StabilityArgs, run=_stability, category="algorithm", minimal=False,
    random=True))
register_tool(Tool(
    name="orientation_probe",
    description="Pairwise direction evidence for x and y: an additive-noise model fitted "
                "both ways with HSIC tests, and pairwise LiNGAM likelihood ratios.",
    args_model=PairProbeArgs, run=_orientation_probe, category="algorithm", minimal=False,
    random=True))
register_tool(Tool(
    name="deletion_log",
    description="The deletion log of PC-KCI, whose output is the starting graph of a guided "
                "episode: every deleted pair with its conditioning set, p-value and statistic.",
    args_model=NoArgs, run=_deletion_log, category="algorithm", guided_only=True))
register_tool(Tool(
    name="evidence_grid",
    description="Cheap evidence about every pair and every variable at once, from the data "
                "alone: correlations and partial correlations, the largest Fisher-z p-value "
                "over small conditioning sets, whether PC (Fisher-z, KCI), BOSS, GRaSP and GES "
                "keep each pair, PC-KCI's deletions, and nonlinear regression gains both ways.",
    args_model=NoArgs, run=_evidence_grid, category="algorithm", minimal=False))
register_tool(Tool(
    name="pair_statistics",
    description="Cheap evidence about every pair and variable at any size, from the data "
                "alone: correlations and partial correlations, the largest Fisher-z p-value "
                "over small sets, PC-Fisher-z's output, random-feature kernel dependence "
                "(marginal and given all others), and additive-noise asymmetry both ways.",
    args_model=NoArgs, run=_pair_statistics, category="algorithm", minimal=False))
register_tool(Tool(
    name="repair_evidence",
    description="Per-pair evidence about PC-KCI's decisions (the starting graph of a guided "
                "episode): for every pair, deleted or kept, KCI and Fisher-z p-values at the "
                "deciding set and its subsets, KCI at other kernel widths, a regression-based "
                "test, a local-score gain of the edge, and which reference algorithms keep it.",
    args_model=RepairEvidenceArgs, run=_repair_evidence, category="algorithm", minimal=False,
    guided_only=True))
