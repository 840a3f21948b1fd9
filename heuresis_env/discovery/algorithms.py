"""The reference causal-discovery algorithms behind one registry (docs/baselines.md).

Every algorithm is an :class:`AlgorithmSpec`: a name, the graph type it returns, its default
parameters with a rule for each, and a runner given as a ``"module:function"`` path, so
nothing heavy (causal-learn's searches, lingam, torch) is imported until it runs. The
built-in runners live by family: :mod:`.constraint_based` (PC, FCI), :mod:`.score_based`
(GES, GRaSP, BOSS), :mod:`.functional_models` (DirectLiNGAM, ANM) and
:mod:`.continuous_optimization` (NOTEARS); :mod:`.causallearn_bridge` converts causal-learn's
graphs and lends it our CI tests.
:func:`run_algorithm` is the single entry point, used by the environment's
``run_algorithm`` tool, the stability tool and the baselines:

- bad input (unknown algorithm, unknown parameter or bad value, unknown or repeated
  variable, fewer than two variables, NaN or constant column) raises a
  :class:`~heuresis_env.errors.HeuresisError` before anything runs;
- a failure inside an algorithm (singular covariance, an exception in a library) never
  raises: it returns an :class:`AlgorithmResult` whose ``error`` says why;
- on a subset of variables the graph is over that subset (a partial graph);
  :meth:`AlgorithmResult.full_graph` embeds it among all variables.

======================  =====  ==========================================================
name                    type   what runs
======================  =====  ==========================================================
``pc-fisherz``          cpdag  our PC with a deletion log (:mod:`heuresis_env.discovery.pc`), Fisher-z
``pc-kci``              cpdag  our PC with KCI
``ges``                 cpdag  GES, BIC score: causal-learn's result (:mod:`heuresis_env.discovery.ges`)
``fci``                 pag    causal-learn FCI with our Fisher-z or KCI test
``direct-lingam``       dag    ``lingam.DirectLiNGAM``
``anm``                 cpdag  PC-KCI's skeleton oriented pairwise by ANM + HSIC (a PDAG)
``notears``             dag    NOTEARS linear (:mod:`heuresis_env.discovery.notears`)
``notears-mlp``         dag    NOTEARS-MLP (:mod:`heuresis_env.discovery.notears`; ``engine`` numpy|torch)
``grasp``               cpdag  causal-learn GRaSP, BIC score
``boss``                cpdag  causal-learn BOSS, BIC score
``gies``                cpdag  GIES (the ``gies`` package), interventional BIC; regimes
``jci-pc``              cpdag  PC on the rows with one context variable per experiment (JCI)
======================  =====  ==========================================================

``gies`` and ``jci-pc`` are *interventional*: they read the rows of several regimes (the
observational table and each experiment's rows, with the columns each experiment set), given
as :class:`Interventions`; :func:`available_algorithms` lists them only when asked, so the
observational benchmark's list is as it was.

The "cpdag" type covers any PDAG (directed and undirected edges). Choices worth knowing:

- GES, GRaSP and BOSS use causal-learn's BIC with ``lambda_value`` = 0.5, the standard
  penalty ½·log n per parameter (causal-learn's own GRaSP/BOSS default is 2, four times
  that). They, and DirectLiNGAM, fail with a message naming the columns when the
  covariance matrix is singular (an exact linear dependence), where BIC is undefined.
- GRaSP and BOSS shuffle with Python's global ``random``; it is seeded from ``seed`` for the
  run and restored afterwards. causal-learn's prints are swallowed.
- FCI calls our CI tests through causal-learn's ``register_ci_test`` hook, so its Fisher-z
  equals causal-learn's and its KCI is our fast, disk-cached KCI.
- DirectLiNGAM: edge i → j when |B[j, i]| > ``threshold`` (lingam's ``adjacency_matrix_``
  has the effect in the row); the default 0 keeps every coefficient adaptive lasso kept.
- anm: see :func:`heuresis_env.discovery.orientation.orient_skeleton_pairwise` (decision rule, cycles).
- NOTEARS(-MLP) returns its thresholded DAG even when h ≤ h_tol was not reached
  (``extras["converged"]`` False, plus a warning); NOTEARS-MLP runs torch on one thread.

``extras`` holds what an agent or analysis may want besides the graph: PC's
``deletion_log``, ``n_tests`` and ``orientation`` (the rule and its decision on every
unshielded triple: collider, non-collider or ambiguous, with the separating sets behind it); GES's ``score``; DirectLiNGAM's and NOTEARS' weighted
``edges``; LiNGAM's ``causal_order``; ANM's per-edge ``orientation`` evidence; and
``warnings`` raised during the run.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heuresis_env.cache import MemoCache, ResultCache, stable_hash
from heuresis_env.data import validate_data
from heuresis_env.discovery.pc_orientation import DEFAULT_ORIENTATION, ORIENTATION_RULES
from heuresis_env.errors import DataError, HeuresisError, UnknownNameError
from heuresis_env.graphs import EdgeMark, Graph, GraphType

#: a runner: (data of the chosen columns, their names, merged params, seed) → (graph, extras);
#: an interventional runner also takes ``interventions=`` (:class:`Interventions`)
Runner = Callable[..., tuple[Graph, dict[str, Any]]]


@dataclass(frozen=True)
class Interventions:
    """Which regime each row of the data comes from (0 observational, k ≥ 1 the k-th
    experiment) and, per regime, the indices of the columns its experiment set (``targets[0]``
    is empty). An interventional algorithm reads the rows regime by regime."""

    labels: np.ndarray
    targets: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        labels = np.asarray(self.labels)
        if labels.ndim != 1 or labels.dtype.kind not in "iu":
            raise HeuresisError("interventions' labels must be a 1-D integer array")
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "targets", tuple(tuple(int(t) for t in ts)
                                                  for ts in self.targets))
        if labels.size and (labels.min() < 0 or labels.max() >= len(self.targets)):
            raise HeuresisError(f"regime labels must be in 0..{len(self.targets) - 1}")

    def restricted(self, columns: Sequence[int]) -> Interventions:
        """The same regimes over a subset of the columns (targets outside it dropped and the
        kept ones renumbered)."""
        position = {c: k for k, c in enumerate(columns)}
        return Interventions(self.labels, tuple(tuple(position[t] for t in ts if t in position)
                                                for ts in self.targets))

    def identity(self) -> dict[str, Any]:
        """What a cache key needs: the label counts in order and the targets."""
        return {"labels": stable_hash(self.labels.tolist()), "targets": self.targets}


class AlgorithmFailure(RuntimeError):
    """Raised inside a runner when an algorithm cannot produce a graph; becomes an error result."""


# ---- parameter rules ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ParamRule:
    """What values a parameter accepts: a predicate and its description for error messages."""

    check: Callable[[Any], bool]
    expected: str

    def validate(self, algorithm: str, key: str, value: Any) -> None:
        try:
            ok = bool(self.check(value))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise HeuresisError(
                f"parameter {key!r} of algorithm {algorithm!r} must be {self.expected}, "
                f"got {value!r}"
            )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def open_unit() -> ParamRule:
    return ParamRule(lambda v: _is_number(v) and 0 < v < 1, "a number in the open interval (0, 1)")


def non_negative() -> ParamRule:
    return ParamRule(lambda v: _is_number(v) and v >= 0, "a finite number ≥ 0")


def positive() -> ParamRule:
    return ParamRule(lambda v: _is_number(v) and v > 0, "a finite number > 0")


def int_at_least(low: int) -> ParamRule:
    return ParamRule(lambda v: _is_int(v) and v >= low, f"an integer ≥ {low}")


def optional_int_at_least(low: int) -> ParamRule:
    return ParamRule(lambda v: v is None or (_is_int(v) and v >= low),
                     f"None or an integer ≥ {low}")


def one_of(*choices: Any) -> ParamRule:
    return ParamRule(lambda v: v in choices, f"one of {', '.join(repr(c) for c in choices)}")


# ---- specs and the registry --------------------------------------------------------------------

@dataclass(frozen=True)
class AlgorithmSpec:
    """One registered algorithm. ``runner`` is a ``"module:function"`` path or a callable
    with the :data:`Runner` signature; ``param_rules`` may cover some or all parameters."""

    name: str
    description: str
    graph_type: GraphType
    default_params: Mapping[str, Any]
    runner: str | Runner
    param_rules: Mapping[str, ParamRule] = field(default_factory=dict)
    #: reads regimes (:class:`Interventions`) beside the rows
    interventional: bool = False

    def resolve_runner(self) -> Runner:
        if callable(self.runner):
            return self.runner
        module, _, attribute = self.runner.partition(":")
        return getattr(importlib.import_module(module), attribute)

    def merged_params(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """Defaults overridden by ``params``; unknown keys and bad values raise."""
        if params is not None and not isinstance(params, Mapping):
            raise HeuresisError(f"params must be a mapping of parameter names to values, "
                                f"got {type(params).__name__}")
        params = dict(params or {})
        unknown = sorted(set(params) - set(self.default_params))
        if unknown:
            accepted = ", ".join(sorted(self.default_params)) or "(none)"
            raise HeuresisError(
                f"unknown parameter(s) {', '.join(map(repr, unknown))} for algorithm "
                f"{self.name!r}; accepted: {accepted}"
            )
        merged = {**self.default_params, **params}
        for key, rule in self.param_rules.items():
            rule.validate(self.name, key, merged[key])
        return merged

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (for tool schemas and ``--help`` texts)."""
        return {
            "name": self.name,
            "description": self.description,
            "graph_type": str(self.graph_type),
            "params": {
                key: {"default": value,
                      "expected": self.param_rules[key].expected if key in self.param_rules
                      else "any value"}
                for key, value in self.default_params.items()
            },
        }


ALGORITHMS: dict[str, AlgorithmSpec] = {}


def register_algorithm(spec: AlgorithmSpec, overwrite: bool = False) -> AlgorithmSpec:
    """Add ``spec`` to the registry (a name already taken needs ``overwrite=True``)."""
    if not isinstance(spec, AlgorithmSpec):
        raise HeuresisError(f"register_algorithm needs an AlgorithmSpec, got {type(spec).__name__}")
    if spec.name in ALGORITHMS and not overwrite:
        raise HeuresisError(
            f"an algorithm named {spec.name!r} is already registered; pass overwrite=True"
        )
    unknown_rules = sorted(set(spec.param_rules) - set(spec.default_params))
    if unknown_rules:
        raise HeuresisError(f"param_rules name parameters without defaults: {unknown_rules}")
    ALGORITHMS[spec.name] = spec
    return spec


def available_algorithms(interventional: bool = False) -> list[str]:
    """Registered algorithm names, in registration order: the observational ones, and with
    ``interventional`` those that read experiments too."""
    return [name for name, spec in ALGORITHMS.items()
            if interventional or not spec.interventional]


def get_algorithm(name: str) -> AlgorithmSpec:
    try:
        return ALGORITHMS[name]
    except (KeyError, TypeError):
        raise UnknownNameError("algorithm", name, ALGORITHMS) from None


# ---- results -----------------------------------------------------------------------------------

def _jsonable(value: Any) -> Any:
    """Plain JSON types from numpy values, dataclasses, sets and objects with ``to_dict``."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, frozenset | set):
        return sorted(_jsonable(v) for v in value)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return _jsonable(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
    return value


@dataclass
class AlgorithmResult:
    """One run: the graph over ``variables`` (None when the run failed, see ``error``)."""

    algorithm: str
    params: dict[str, Any]
    variables: tuple[str, ...]
    graph: Graph | None
    graph_type: str
    runtime_seconds: float
    error: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.graph is not None

    def full_graph(self, all_names: Sequence[str]) -> Graph | None:
        """The graph embedded among ``all_names``: no edges touch the other variables.

        None when the run failed.
        """
        all_names = tuple(all_names)
        missing = [v for v in self.variables if v not in all_names]
        if missing:
            raise UnknownNameError("variable", missing[0], all_names)
        if self.graph is None:
            return None
        full = Graph(all_names)
        index = [all_names.index(v) for v in self.graph.names]
        full.marks[np.ix_(index, index)] = self.graph.marks
        return Graph(all_names, full.marks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "algorithm": self.algorithm,
            "params": _jsonable(self.params),
            "variables": list(self.variables),
            "graph": None if self.graph is None else self.graph.to_dict(),
            "graph_type": str(self.graph_type),
            "runtime_seconds": self.runtime_seconds,
            "error": self.error,
            "extras": _jsonable(self.extras),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AlgorithmResult:
        graph = data.get("graph")
        return cls(
            algorithm=data["algorithm"],
            params=dict(data["params"]),
            variables=tuple(data["variables"]),
            graph=None if graph is None else Graph.from_dict(graph),
            graph_type=str(data["graph_type"]),
            runtime_seconds=float(data["runtime_seconds"]),
            error=data.get("error"),
            extras=dict(data.get("extras") or {}),
        )

    def __repr__(self) -> str:
        status = "ok" if self.ok else f"error={self.error!r}"
        return (f"AlgorithmResult({self.algorithm}, {len(self.variables)} variables, "
                f"{self.graph!r}, {self.runtime_seconds:.2f}s, {status})")


def _check_graph(graph: Any, graph_type: GraphType, variables: tuple[str, ...]) -> str | None:
    """Why a runner's graph does not fit the declared type, or None."""
    if not isinstance(graph, Graph):
        return f"the runner returned {type(graph).__name__}, not a Graph"
    if graph.names != variables:
        return f"the graph is over {graph.names}, expected {variables}"
    actual = graph.graph_type()
    if graph_type == GraphType.DAG and not graph.is_dag():
        return f"a DAG was expected but the graph is a {actual} or has a directed cycle"
    if graph_type == GraphType.CPDAG and actual not in (GraphType.DAG, GraphType.CPDAG):
        return f"a CPDAG was expected but the graph has PAG marks ({actual})"
    if graph_type == GraphType.SKELETON and np.any(graph.marks[graph.skeleton()] != EdgeMark.TAIL):
        return "a skeleton was expected but the graph has oriented edges"
    return None


def _resolve_variables(names: tuple[str, ...], variables: Sequence[str] | None) -> list[int]:
    if variables is None:
        chosen = list(names)
    else:
        if isinstance(variables, str):
            raise HeuresisError("variables must be a list of names, not one string")
        chosen = [str(v) for v in variables]
    for v in chosen:
        if v not in names:
            raise UnknownNameError("variable", v, names)
    repeated = sorted({v for v in chosen if chosen.count(v) > 1})
    if repeated:
        raise HeuresisError(f"variables are repeated: {repeated}")
    if len(chosen) < 2:
        raise HeuresisError(f"an algorithm needs at least 2 variables, got {len(chosen)}")
    return [names.index(v) for v in chosen]


def run_algorithm(name: str, data: np.ndarray, names: Sequence[str] | None = None,
                  params: Mapping[str, Any] | None = None,
                  variables: Sequence[str] | None = None, seed: int = 0,
                  interventions: Interventions | None = None) -> AlgorithmResult:
    """Run a registered algorithm on ``data`` (n × d, columns named ``names``).

    ``variables`` restricts the run to those columns (the graph is then over them only).
    ``seed`` seeds every random draw of the algorithm. ``interventions`` gives the regime of
    every row (an interventional algorithm needs it; without it every row is observational;
    the others read the rows as one table). Bad input raises; a failure inside the algorithm
    returns a result with ``error`` set and ``graph`` None. Warnings raised while running are
    kept in ``extras["warnings"]``.
    """
    spec = get_algorithm(name)
    merged = spec.merged_params(params)
    if not _is_int(seed) or seed < 0:
        raise HeuresisError(f"seed must be an integer ≥ 0, got {seed!r}")
    array = np.asarray(data)
    if array.ndim != 2:
        raise DataError(f"data must be a 2-D array (rows × columns), got shape {array.shape}")
    if names is None:
        names = [f"X{i + 1}" for i in range(array.shape[1])]
    names = tuple(str(n) for n in names)
    if len(names) != array.shape[1]:
        raise DataError(f"{len(names)} names given for {array.shape[1]} data columns")
    if len(set(names)) != len(names):
        raise HeuresisError(f"names must be unique; repeated: "
                            f"{sorted({n for n in names if names.count(n) > 1})}")
    index = _resolve_variables(names, variables)
    chosen = tuple(names[i] for i in index)
    try:
        subset = validate_data(array[:, index])
    except DataError as exc:
        raise DataError(f"{exc} (columns counted within {list(chosen)})") from None
    runner = spec.resolve_runner()
    extra_arguments: dict[str, Any] = {}
    if spec.interventional:
        if interventions is None:
            interventions = Interventions(np.zeros(array.shape[0], dtype=np.int64), ((),))
        if interventions.labels.shape != (array.shape[0],):
            raise DataError(f"{interventions.labels.size} regime labels for "
                            f"{array.shape[0]} rows")
        extra_arguments["interventions"] = interventions.restricted(index)

    start = time.perf_counter()
    graph: Graph | None = None
    extras: dict[str, Any] = {}
    error: str | None = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            graph, extras = runner(subset, chosen, dict(merged), int(seed), **extra_arguments)
        except Exception as exc:  # any failure inside the algorithm is a result, not a crash
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    runtime = time.perf_counter() - start
    if error is None:
        problem = _check_graph(graph, spec.graph_type, chosen)
        if problem is not None:
            graph, error = None, f"invalid output: {problem}"
    extras = dict(extras or {})
    messages = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
    if messages:
        extras["warnings"] = messages[:20]
    return AlgorithmResult(name, merged, chosen, graph if error is None else None,
                           str(spec.graph_type), runtime, error, extras)


#: bump when an algorithm's output for the same inputs changes, so cached outputs are not reused
#: (the evidence store, the stability tool and the baselines' reference records key on it too)
ALGORITHM_CACHE_VERSION = 4  # 3, 4: NOTEARS' and NOTEARS-MLP's arithmetic (issue 14); 2: issue 13
_RECENT: MemoCache[AlgorithmResult] = MemoCache(256)


def cached_run_algorithm(name: str, data: np.ndarray, names: Sequence[str], sha256: str,
                         params: Mapping[str, Any] | None = None,
                         variables: Sequence[str] | None = None, seed: int = 0,
                         interventions: Interventions | None = None) -> AlgorithmResult:
    """:func:`run_algorithm` cached by (data hash, column names, name, params, variables, seed).

    Kept on disk for every process and episode, and in memory for this process's latest
    calls; the ``run_algorithm`` tool and the reports' provenance study read the same entries.
    """
    params = dict(params or {})
    variables = None if variables is None else list(variables)
    identity = {"sha256": sha256, "algorithm": name, "params": params, "variables": variables,
                "seed": seed, "version": ALGORITHM_CACHE_VERSION}
    if tuple(names) != tuple(f"X{i + 1}" for i in range(len(names))):
        identity["names"] = list(names)  # outputs are graphs over the names (decoy names)
    if interventions is not None and get_algorithm(name).interventional:
        identity["interventions"] = interventions.identity()
    key = stable_hash(identity)
    result = _RECENT.get(key)
    if result is None:
        store = ResultCache("run_algorithm")
        result = store.get(key)
        if result is None:
            result = run_algorithm(name, data, names, params=params, variables=variables,
                                   seed=seed, interventions=interventions)
            store.set(key, result)
        _RECENT.set(key, result)
    return result


# ---- shared helpers for the runners ------------------------------------------------------------

def require_nonsingular(data: np.ndarray, names: Sequence[str], method: str,
                        tolerance: float = 1e-10) -> None:
    """Fail (as an :class:`AlgorithmFailure`) when the correlation matrix is singular.

    Linear-Gaussian scores and regressions are undefined when a column is an exact linear
    combination of others; the message names the columns involved.
    """
    correlation = np.corrcoef(data, rowvar=False)
    eigenvalues, eigenvectors = np.linalg.eigh(correlation)
    if eigenvalues[0] > tolerance:
        return
    loading = np.abs(eigenvectors[:, 0])
    involved = [names[i] for i in np.nonzero(loading > 0.05)[0]]
    raise AlgorithmFailure(
        f"{method} needs a non-singular covariance matrix, but columns {involved} are "
        f"(nearly) linearly dependent (smallest correlation eigenvalue {eigenvalues[0]:.2e})"
    )


# ---- the built-in registry ------------------------------------------------------------------

#: the modules holding the built-in runners (imported when an algorithm first runs)
_CONSTRAINT_BASED = "heuresis_env.discovery.constraint_based"
_SCORE_BASED = "heuresis_env.discovery.score_based"
_FUNCTIONAL = "heuresis_env.discovery.functional_models"
_CONTINUOUS = "heuresis_env.discovery.continuous_optimization"
_INTERVENTIONAL = "heuresis_env.discovery.interventional"
_PC_PARAMS = {"alpha": 0.05, "variant": "stable", "max_depth": None,
              "orientation": DEFAULT_ORIENTATION}
_PC_RULES = {"alpha": open_unit(), "variant": one_of("stable", "original"),
             "max_depth": optional_int_at_least(0), "orientation": one_of(*ORIENTATION_RULES)}
_PC_ORIENTATION_HELP = ("Orientation: union (causal-learn's rule), single (the deleting set), "
                        "conservative (CPC) or majority (MPC)")
_NOTEARS_RULES = {"lambda1": non_negative(), "w_threshold": non_negative(),
                  "max_iter": int_at_least(1), "h_tol": positive(), "rho_max": positive()}


def _register_builtin() -> None:
    register_algorithm(AlgorithmSpec(
        "pc-fisherz", "PC with the Fisher-z test (linear-Gaussian); deletion log in extras. "
        + _PC_ORIENTATION_HELP,
        GraphType.CPDAG, dict(_PC_PARAMS), f"{_CONSTRAINT_BASED}:run_pc_fisherz", _PC_RULES))
    register_algorithm(AlgorithmSpec(
        "pc-kci", "PC with the kernel CI test KCI (nonparametric; above 2,000 rows its fast "
        "approximation RCoT, as kci-auto); deletion log in extras. "
        + _PC_ORIENTATION_HELP,
        GraphType.CPDAG, dict(_PC_PARAMS), f"{_CONSTRAINT_BASED}:run_pc_kci", _PC_RULES))
    register_algorithm(AlgorithmSpec(
        "ges", "Greedy equivalence search with the linear-Gaussian BIC score. Implementation: "
        "heuresis (causal-learn's result, tested equal, faster) or causal-learn (its own ges)",
        GraphType.CPDAG, {"lambda_value": 0.5, "max_parents": None, "implementation": "heuresis"},
        f"{_SCORE_BASED}:run_ges",
        {"lambda_value": positive(), "max_parents": optional_int_at_least(0),
         "implementation": one_of("heuresis", "causal-learn")}))
    register_algorithm(AlgorithmSpec(
        "fci", "Fast causal inference (allows latent confounders); returns a PAG",
        GraphType.PAG, {"test": "fisherz", "alpha": 0.05, "depth": -1}, f"{_CONSTRAINT_BASED}:run_fci",
        {"test": one_of("fisherz", "kci"), "alpha": open_unit(), "depth": int_at_least(-1)}))
    register_algorithm(AlgorithmSpec(
        "direct-lingam", "DirectLiNGAM (linear, non-Gaussian noise); returns a DAG",
        GraphType.DAG, {"threshold": 0.0, "measure": "pwling"}, f"{_FUNCTIONAL}:run_direct_lingam",
        {"threshold": non_negative(), "measure": one_of("pwling", "kernel")}))
    register_algorithm(AlgorithmSpec(
        "anm", "PC-KCI's skeleton oriented pairwise by additive-noise models with HSIC",
        GraphType.CPDAG,
        {"alpha": 0.05, "variant": "stable", "hsic_alpha": 0.05, "margin": 0.05,
         "regressor": "spline", "max_rows": 1000},
        f"{_FUNCTIONAL}:run_anm",
        {"alpha": open_unit(), "variant": one_of("stable", "original"),
         "hsic_alpha": open_unit(), "margin": ParamRule(lambda v: _is_number(v) and 0 <= v < 1,
                                                        "a number in [0, 1)"),
         "regressor": one_of("spline", "gp"), "max_rows": int_at_least(50)}))
    register_algorithm(AlgorithmSpec(
        "notears", "NOTEARS linear: least squares + L1 under a smooth acyclicity constraint",
        GraphType.DAG,
        {"lambda1": 0.1, "w_threshold": 0.3, "max_iter": 100, "h_tol": 1e-8, "rho_max": 1e16},
        f"{_CONTINUOUS}:run_notears", _NOTEARS_RULES))
    register_algorithm(AlgorithmSpec(
        "notears-mlp", "NOTEARS-MLP: one MLP per variable under the acyclicity constraint",
        GraphType.DAG,
        {"hidden": 10, "lambda1": 0.01, "lambda2": 0.01, "w_threshold": 0.3, "max_iter": 100,
         "h_tol": 1e-8, "rho_max": 1e16, "max_inner_iter": 15000, "engine": "numpy"},
        f"{_CONTINUOUS}:run_notears_mlp",
        {**_NOTEARS_RULES, "hidden": int_at_least(1), "lambda2": non_negative(),
         "max_inner_iter": int_at_least(1), "engine": one_of("numpy", "torch")}))
    register_algorithm(AlgorithmSpec(
        "grasp", "GRaSP permutation search with the BIC score (causal-learn)",
        GraphType.CPDAG, {"lambda_value": 0.5, "depth": 3}, f"{_SCORE_BASED}:run_grasp",
        {"lambda_value": positive(), "depth": int_at_least(1)}))
    register_algorithm(AlgorithmSpec(
        "boss", "BOSS permutation search with the BIC score (causal-learn)",
        GraphType.CPDAG, {"lambda_value": 0.5}, f"{_SCORE_BASED}:run_boss",
        {"lambda_value": positive()}))
    register_algorithm(AlgorithmSpec(
        "gies", "Greedy interventional equivalence search (Hauser & Buhlmann; the gies "
        "package) with the Gaussian BIC score over every regime: the observational rows and "
        "each experiment's, knowing which columns each experiment set; returns the "
        "interventional essential graph",
        GraphType.CPDAG, {"lambda_value": 0.5}, f"{_INTERVENTIONAL}:run_gies",
        {"lambda_value": positive()}, interventional=True))
    register_algorithm(AlgorithmSpec(
        "jci-pc", "Joint causal inference with PC (Mooij, Magliacane & Claassen): PC on the "
        "pooled rows with one context variable per experiment, exogenous by background "
        "knowledge (causal-learn's PC, Fisher-z or KCI); the edges a context variable points "
        "into orient the rest",
        GraphType.CPDAG, {"alpha": 0.05, "test": "fisherz"}, f"{_INTERVENTIONAL}:run_jci_pc",
        {"alpha": open_unit(), "test": one_of("fisherz", "kci")}, interventional=True))


_register_builtin()
