"""Variable-level tools: describe the data, and (conditional) independence tests."""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from heuresis_env.env.toolbox.registry import (
    NoArgs,
    RLSpec,
    Tool,
    ToolArgs,
    ToolResult,
    VariableList,
    VariableName,
    register_tool,
)
from heuresis_env.env.toolbox.state import EpisodeState, agent_ci_tests
from heuresis_env.errors import HeuresisError

#: strongest pairs listed by describe_data
TOP_PAIRS = 10
#: level at which ci_test states a decision (the p-value is always given)
REPORT_ALPHA = 0.05


class CITestArgs(ToolArgs):
    x: VariableName
    y: VariableName
    given: VariableList = Field(default_factory=list,
                                description="the conditioning set (empty: marginal test)")
    method: str = Field("fisherz", max_length=32, description=(
        "one of " + ", ".join(agent_ci_tests()) + ": fisherz (partial correlation), kci "
        "(kernel CI test), kci-auto (exact kci up to 2,000 rows, the fast rcot above), "
        "kci-block (kci on blocks of rows, combined), rcit / rcot (fast random-feature kernel "
        "tests), dcor (distance correlation), gcm (generalised covariance measure: "
        "cross-fitted nonparametric regressions on the conditioning set)"))


#: the ``data`` argument of the tools that read rows, in an episode with experiments
ROWS_DESCRIPTION = (
    "which rows: \"pooled\" (every row; the regime enters as a context variable: "
    "the test conditions on which experiment each row came from), \"observational\" "
    "(the original table only), or a regime number k (the rows of the k-th intervene call "
    "only)")
RowChoice = Literal["pooled", "observational"] | Annotated[int, Field(ge=0, le=10_000)]


class RegimeCITestArgs(CITestArgs):
    """ci_test's arguments in an episode with an experiment budget."""

    data: RowChoice = Field("pooled", description=ROWS_DESCRIPTION)


def _describe_data(state: EpisodeState, args: NoArgs) -> ToolResult:
    from scipy import stats  # here: scipy.stats costs 0.1–0.3 s to import, in every process

    data = state.data
    n, d = data.shape
    skewness = stats.skew(data, axis=0)
    kurtosis = stats.kurtosis(data, axis=0)
    normality = np.array([stats.normaltest(data[:, k]).pvalue for k in range(d)])
    correlation = np.corrcoef(data, rowvar=False)
    upper = np.triu_indices(d, k=1)
    magnitudes = np.abs(correlation[upper])
    order = np.argsort(-magnitudes, kind="stable")[:TOP_PAIRS]

    width = max(6, max(len(name) for name in state.names))
    lines = [f"Data: {n} rows, {d} columns ({', '.join(state.names)}). Every column is "
             "standardized (mean 0, sd 1); names and column order carry no information.",
             "",
             f"{'column':<{width}}  {'mean':>6} {'sd':>5} {'skew':>6} {'ex.kurt':>7} "
             f"{'normal_p':>8} {'min':>6} {'max':>6}"]
    columns = {}
    for k, name in enumerate(state.names):
        column = data[:, k]
        row = {"mean": float(column.mean()), "sd": float(column.std()),
               "skewness": float(skewness[k]), "excess_kurtosis": float(kurtosis[k]),
               "normality_p": float(normality[k]), "min": float(column.min()),
               "max": float(column.max())}
        columns[name] = row
        lines.append(f"{name:<{width}}  {row['mean']:>6.2f} {row['sd']:>5.2f} "
                     f"{row['skewness']:>6.2f} {row['excess_kurtosis']:>7.2f} "
                     f"{row['normality_p']:>8.3g} {row['min']:>6.2f} {row['max']:>6.2f}")
    lines += ["", "normal_p: D'Agostino-Pearson test of normality (small: non-Gaussian).",
              f"Marginal |Pearson r| over {len(magnitudes)} pairs: median "
              f"{np.median(magnitudes):.3f}, {int(np.sum(magnitudes > 0.3))} above 0.3, "
              f"{int(np.sum(magnitudes > 0.1))} above 0.1.",
              "Strongest pairs: " + ", ".join(
                  f"{state.names[upper[0][k]]}-{state.names[upper[1][k]]} "
                  f"{correlation[upper[0][k], upper[1][k]]:+.3f}" for k in order)]
    return ToolResult(text="\n".join(lines), data={
        "n": n, "d": d, "columns": columns, "correlation": correlation.round(6).tolist()})


def _ci_test(state: EpisodeState, args: CITestArgs) -> ToolResult:
    i, j = state.variable(args.x), state.variable(args.y)
    if i == j:
        raise HeuresisError(f"x and y must differ, got {args.x!r} twice")
    given = state.variables(args.given)
    if i in given or j in given:
        raise HeuresisError(f"the conditioning set {list(args.given)} contains x or y")
    which = getattr(args, "data", "pooled")
    result, n_rows, context = state.regime_test(args.method, which, i, j, given)
    condition = f" | {{{', '.join(args.given)}}}" if args.given else ""
    if context:
        condition = f" | {{{', '.join([*args.given, 'regime'])}}}"
    elif which not in ("pooled", "observational"):
        condition += f" on regime {which}"
    decision = ("independence rejected" if result.p_value <= REPORT_ALPHA
                else "independence not rejected")
    ran = "" if result.method == args.method else f" (ran {result.method})"
    text = (f"{args.x} _||_ {args.y}{condition} by {args.method}{ran}: statistic "
            f"{result.statistic:.4g}, p-value {result.p_value:.4g} ({decision} at alpha = "
            f"{REPORT_ALPHA}).")
    data = {"x": args.x, "y": args.y, "given": list(args.given), "method": args.method,
            "statistic": result.statistic, "p_value": result.p_value}
    if state.regimes is not None:
        data.update(data_rows=which, n_rows=n_rows)
    if ran:  # kci-auto: the test that ran
        data["ran"] = result.method
    return ToolResult(text=text, data=data)


def _rl_test_args(state: EpisodeState, i: int, j: int) -> dict:
    """The RL view's test on a pair: KCI at the set where PC-Fisher-z deleted it (or ∅)."""
    table = state.require_evidence().pair_table()  # the sets need PC-Fisher-z only
    conditioning = table.conditioning_set(table.pair_index(i, j))
    return {"x": state.names[i], "y": state.names[j],
            "given": [state.names[k] for k in conditioning], "method": "kci"}


register_tool(Tool(
    name="describe_data",
    description="Summarize the data: per-column moments and normality tests, and the "
                "marginal correlations (their summary and the strongest pairs).",
    args_model=NoArgs, run=_describe_data, category="data"))
#: the most rows one sample_rows call returns
MAX_SAMPLE_ROWS = 1_000


class SampleRowsArgs(ToolArgs):
    count: int = Field(200, ge=1, le=MAX_SAMPLE_ROWS,
                       description=f"rows to draw (at most {MAX_SAMPLE_ROWS:,}; all rows when the "
                                   "table has fewer)")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="seed of the draw")


class RegimeSampleRowsArgs(SampleRowsArgs):
    """sample_rows' arguments in an episode with an experiment budget."""

    data: RowChoice = Field("observational", description=(
        "which rows: \"observational\" (the original table, the default), \"pooled\" "
        "(every regime's rows, each with its regime label), or a regime number k"))


def _sample_rows(state: EpisodeState, args: SampleRowsArgs) -> ToolResult:
    data, labels = state.data, None
    which = getattr(args, "data", "observational")
    if which == "pooled" and state.regimes is not None:
        data, labels = state.regimes.pooled()
    elif which != "observational":
        data = state.require_regimes().block(int(which)).rows
    n = data.shape[0]
    chosen = np.sort(np.random.default_rng(args.seed).permutation(n)[:args.count])
    rows = data[chosen]
    shown = min(len(rows), 20)
    lines = [f"{len(rows)} of the {n} rows, drawn at random without replacement (seed "
             f"{args.seed}), in table order; the first {shown} shown, all in the data.",
             "  ".join(state.names)]
    lines += ["  ".join(f"{v:.4g}" for v in row) for row in rows[:shown]]
    result = {"names": list(state.names), "rows": rows.tolist(),
              "row_numbers": chosen.tolist()}
    if labels is not None:  # each row's regime (0 observational, k the k-th experiment)
        result["regimes"] = labels[chosen].tolist()
    return ToolResult(text="\n".join(lines), data=result)


register_tool(Tool(
    name="sample_rows",
    description="A random sample of the table's rows (what a model that reads rows reads): "
                "the values as data, the first rows as text.",
    args_model=SampleRowsArgs, run=_sample_rows, category="data", minimal=False,
    experiment_args=RegimeSampleRowsArgs))
register_tool(Tool(
    name="ci_test",
    description="Test whether x and y are independent given a set of variables: returns the "
                "statistic and p-value of the chosen test (Fisher-z, KCI, RCIT, RCoT, "
                "distance correlation). A small p-value is evidence of dependence.",
    args_model=CITestArgs, run=_ci_test, category="data", experiment_args=RegimeCITestArgs,
    rl=RLSpec("test", "unordered", make_args=_rl_test_args)))
