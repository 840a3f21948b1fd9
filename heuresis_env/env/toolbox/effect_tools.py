"""Effect-level tool: the average treatment effect of one variable on another.

``method="ols"`` (always available) is back-door adjustment by linear regression of the
outcome on the treatment and the covariates, with heteroskedasticity-robust (HC1) standard
errors. ``method="dml"`` is econml's LinearDML (double machine learning with cross-fitting),
an optional extra: ``pip install 'heuresis[effects]'``.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field
from scipy.special import ndtri

from heuresis_env.env.toolbox.registry import (
    Tool,
    ToolArgs,
    ToolResult,
    VariableList,
    VariableName,
    register_tool,
)
from heuresis_env.env.toolbox.state import EpisodeState
from heuresis_env.errors import HeuresisError

CONFIDENCE = 0.95


class EffectArgs(ToolArgs):
    treatment: VariableName
    outcome: VariableName
    covariates: VariableList | None = Field(
        None, description="adjustment set; default: the treatment's parents in the working "
                          "graph (a valid back-door set when the graph is right)")
    method: Literal["ols", "dml"] = Field(
        "ols", description="ols: back-door linear regression; dml: linear double machine "
                           "learning (needs econml)")


def backdoor_ols(outcome: np.ndarray, treatment: np.ndarray,
                 covariates: np.ndarray) -> tuple[float, float]:
    """Coefficient of the treatment in OLS of outcome on [1, treatment, covariates], HC1 SE."""
    n = outcome.shape[0]
    design = np.column_stack([np.ones(n), treatment, covariates])
    coefficients, *_ = np.linalg.lstsq(design, outcome, rcond=None)
    residuals = outcome - design @ coefficients
    gram_inverse = np.linalg.pinv(design.T @ design)
    meat = (design * residuals[:, None] ** 2).T @ design
    covariance = gram_inverse @ meat @ gram_inverse * n / max(n - design.shape[1], 1)
    return float(coefficients[1]), float(math.sqrt(max(covariance[1, 1], 0.0)))


def _linear_dml(outcome: np.ndarray, treatment: np.ndarray, covariates: np.ndarray,
                seed: int) -> tuple[float, float]:
    from econml.dml import LinearDML

    model = LinearDML(discrete_treatment=False, random_state=seed)
    model.fit(outcome, treatment, X=None, W=covariates if covariates.shape[1] else None)
    effect = float(np.ravel(model.ate())[0])
    low, high = (float(np.ravel(v)[0]) for v in model.ate_interval(alpha=1 - CONFIDENCE))
    z = float(ndtri(0.5 + CONFIDENCE / 2))
    return effect, (high - low) / (2 * z)


def _estimate_effect(state: EpisodeState, args: EffectArgs) -> ToolResult:
    t, y = state.variable(args.treatment), state.variable(args.outcome)
    if t == y:
        raise HeuresisError(f"treatment and outcome must differ, got {args.treatment!r} twice")
    if args.covariates is None:
        covariate_names = state.working_graph.parents(args.treatment)
        source = "the treatment's parents in the working graph"
    else:
        covariate_names = list(args.covariates)
        source = "given"
    columns = state.variables(covariate_names)
    if t in columns or y in columns:
        raise HeuresisError("the covariates must not contain the treatment or the outcome")
    covariates = state.data[:, columns]
    if args.method == "dml":
        try:
            import econml  # noqa: F401
        except ImportError:
            return ToolResult.failure(
                "method='dml' needs the optional econml package: pip install "
                "'heuresis[effects]'. method='ols' (back-door regression) is always available")
        effect, standard_error = _linear_dml(state.data[:, y], state.data[:, t], covariates,
                                             state.call_seed())
        label = "linear DML (econml LinearDML, cross-fitted)"
    else:
        effect, standard_error = backdoor_ols(state.data[:, y], state.data[:, t], covariates)
        label = "back-door OLS (HC1 standard error)"
    z = float(ndtri(0.5 + CONFIDENCE / 2))
    low, high = effect - z * standard_error, effect + z * standard_error
    adjusted = "{" + ", ".join(covariate_names) + "}"
    text = (f"Average effect of {args.treatment} on {args.outcome} by {label}, adjusting for "
            f"{adjusted} ({source}): {effect:+.4f} per standard deviation of "
            f"{args.treatment} (SE {standard_error:.4f}, {CONFIDENCE:.0%} CI "
            f"[{low:+.4f}, {high:+.4f}]). Valid when the adjustment set blocks every back-door "
            "path and contains no descendant of the treatment"
            + (", and the effect is linear." if args.method == "ols" else "."))
    return ToolResult(text=text, data={
        "treatment": args.treatment, "outcome": args.outcome, "covariates": covariate_names,
        "method": args.method, "effect": effect, "standard_error": standard_error,
        "ci_low": low, "ci_high": high})


register_tool(Tool(
    name="estimate_effect",
    description="Estimate the average treatment effect of one variable on another, adjusting "
                "for covariates: back-door linear regression (ols) or linear double machine "
                "learning (dml, needs econml).",
    args_model=EffectArgs, run=_estimate_effect, category="effect", random=True))
