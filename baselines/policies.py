"""The reference baselines as policies, so the evaluation runner drives them like any agent.

- :class:`AlgorithmPolicy` — algorithm-as-submission: one ``run_algorithm`` call, then
  ``submit`` with the output's edges.
- :class:`BCAPolicy` — the family's best chosen algorithm BCA_φ (selected on development
  instances), then as :class:`AlgorithmPolicy`.
- :class:`OraclePolicy` — the ideal oracle, a reference that knows the truth: ``heuresis
  evaluate`` runs it on the referee's side (entry point group ``heuresis.references``) and
  hands it the instance; it submits PC-KCI's output with every wrongly deleted true edge
  restored.
- :class:`MergePolicy` — calls each algorithm through the tool and submits merge_k.

The factories at the end are the values of the ``heuresis.policies`` entry points.
"""

from __future__ import annotations

import functools
import json
import numbers
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baselines.merges import merge_k
from baselines.oracle import ideal_oracle
from baselines.reference import REFERENCE_ALGORITHMS, reference_record
from baselines.selection import select_bca
from heuresis_env.discovery import get_algorithm
from heuresis_env.env import MAX_LIST_ITEMS
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation import (
    SPLIT_SIZES,
    InstanceKey,
    SaltArgument,
    generate_instance,
    sealing_salt,
)
from heuresis_env.graphs import EdgeMark, Graph
from heuresis_env.policy import Policy, ReferencePolicy

__all__ = [
    "DEFAULT_SELECTION_COUNT",
    "AlgorithmPolicy",
    "BCAPolicy",
    "MergePolicy",
    "OraclePolicy",
    "algorithm_policy",
    "bca_policy",
    "edge_strings",
    "load_bca_selection",
    "merge_policy",
    "oracle_policy",
    "select_bca_on_the_fly",
    "selection_size",
    "shipped_selection",
]

#: development instances BCAPolicy selects on when no selection file is given
DEFAULT_SELECTION_COUNT = 10
#: graph-memory name under which the policies save an algorithm's output
OUTPUT_NAME = "baseline_output"

_WRITABLE_MARKS = {
    (EdgeMark.TAIL, EdgeMark.ARROW), (EdgeMark.ARROW, EdgeMark.TAIL),
    (EdgeMark.TAIL, EdgeMark.TAIL), (EdgeMark.ARROW, EdgeMark.ARROW),
    (EdgeMark.CIRCLE, EdgeMark.ARROW), (EdgeMark.ARROW, EdgeMark.CIRCLE),
    (EdgeMark.CIRCLE, EdgeMark.CIRCLE),
}


def edge_strings(graph: Graph) -> list[str] | None:
    """The graph as the edge list ``submit``/``set_graph`` read (``"X1 --> X2"``, ...).

    None when the list cannot express it: an edge with a circle–tail pair of marks, or more
    edges than an action list may hold.
    """

    edges = graph.edges()
    if len(edges) > MAX_LIST_ITEMS:
        return None
    if any((edge.mark_u, edge.mark_v) not in _WRITABLE_MARKS for edge in edges):
        return None
    return [str(edge) for edge in edges]


def _budget_left(observation: Any) -> int:
    try:
        return int(np.asarray(observation["budget_left"]).reshape(-1)[0])
    except (KeyError, TypeError, IndexError):
        return 1_000_000


def _submit(graph: Graph | None) -> dict[str, Any]:
    """``submit`` with the graph's edges (or of the working graph when there is none)."""
    if graph is None:
        return {"tool": "submit", "args": {}}
    edges = edge_strings(graph)
    if edges is None:
        return {"tool": "submit", "args": {}}
    return {"tool": "submit", "args": {"edges": edges}}


def _check_algorithm(name: Any, params: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:

    if not isinstance(name, str):
        raise HeuresisError(f"an algorithm name must be a string, got {name!r}")
    if params is not None and not isinstance(params, Mapping):
        raise HeuresisError(f"params must be a mapping of parameter names to values, "
                            f"got {params!r}")
    get_algorithm(name).merged_params(params)  # unknown names and bad parameters raise here
    return name, dict(params or {})


# ---- algorithm-as-submission ---------------------------------------------------------------------

class AlgorithmPolicy(Policy):
    """One ``run_algorithm`` call, then ``submit`` with the output's edges.

    The output is also saved in the graph memory; when its edges cannot be written as a list
    (circle–tail marks, over 512 edges) the policy loads it with ``load_graph`` and submits the
    working graph. A failed or refused run submits the empty graph; if the environment refuses
    the submitted list (e.g. a directed cycle under the dag target), the policy submits the
    working graph as it stands. Either way, and when the step budget leaves no room for the
    run, :meth:`failure` says why, so the runner records the episode as an error (not as a
    finished empty submission).
    """

    interface = "text"

    def __init__(self, name: str, params: Mapping[str, Any] | None = None):
        self.algorithm, self.params = _check_algorithm(name, params)
        self.name = self.algorithm
        self._stage = "run"
        self.output: Graph | None = None
        self.error: str | None = None

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self._stage = "run"
        self.output = None
        self.error = None

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        stage = self._stage
        if stage == "run":
            budget = _budget_left(observation)
            if budget < 2:
                self.error = (f"the step budget left {budget} step(s): no room to run "
                              f"{self.algorithm} and submit its output")
                self._stage = "done"
                return {"tool": "submit", "args": {}}
            self._stage = "read"
            return {"tool": "run_algorithm", "args": {"name": self.algorithm,
                                                      "params": self.params,
                                                      "save_as": OUTPUT_NAME}}
        if stage == "read":
            data = info.get("data") or {}
            if info.get("error") is not None or data.get("graph") is None:
                reason = info.get("error") or "it returned no graph"
                self.error = f"run_algorithm {self.algorithm} failed: {reason}"
                self._stage = "submitted"
                return {"tool": "submit", "args": {"edges": []}}
            self.output = Graph.from_dict(data["graph"])
            if edge_strings(self.output) is None:
                if _budget_left(observation) >= 2:
                    self._stage = "loaded"
                    return {"tool": "load_graph", "args": {"name": OUTPUT_NAME}}
                self.error = (f"{self.algorithm}'s output cannot be written as an edge list "
                              "and no step was left to load it: the working graph was "
                              "submitted instead")
            self._stage = "submitted"
            return _submit(self.output)
        # after load_graph, or after a refused submit: submit the working graph
        if self.error is None and info.get("error") is not None:
            what = "load_graph of" if stage == "loaded" else "the submission of"
            self.error = (f"{what} {self.algorithm}'s output was refused ({info['error']}): "
                          "the working graph was submitted instead")
        self._stage = "done"
        return {"tool": "submit", "args": {}}

    def failure(self) -> str | None:
        return self.error


def algorithm_policy(name: str, params: Mapping[str, Any] | None = None) -> AlgorithmPolicy:
    """Entry-point factory of :class:`AlgorithmPolicy` (policy ``algorithm``, option ``name``)."""
    return AlgorithmPolicy(name, params)


def _named_algorithm_factory(algorithm: str):
    """A factory registered under the algorithm's own name, so runs and reports read
    ``pc-kci`` rather than ``algorithm``; keyword options are the algorithm's parameters."""

    def factory(**params: Any) -> AlgorithmPolicy:
        return AlgorithmPolicy(algorithm, params or None)

    factory.__name__ = factory.__qualname__ = algorithm.replace("-", "_") + "_policy"
    factory.__doc__ = f"Entry-point factory: {algorithm} as a submission (policy ``{algorithm}``)."
    return factory


pc_fisherz_policy = _named_algorithm_factory("pc-fisherz")
pc_kci_policy = _named_algorithm_factory("pc-kci")
ges_policy = _named_algorithm_factory("ges")
fci_policy = _named_algorithm_factory("fci")
direct_lingam_policy = _named_algorithm_factory("direct-lingam")
anm_policy = _named_algorithm_factory("anm")
notears_policy = _named_algorithm_factory("notears")
notears_mlp_policy = _named_algorithm_factory("notears-mlp")
grasp_policy = _named_algorithm_factory("grasp")
boss_policy = _named_algorithm_factory("boss")


# ---- BCA ----------------------------------------------------------------------------------------

def _read_selection_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HeuresisError(f"BCA selection file {str(path)!r} does not exist; write one with "
                            "'heuresis baselines --split dev --json FILE'") from None
    except json.JSONDecodeError as exc:
        raise HeuresisError(f"BCA selection file {str(path)!r} is not JSON: {exc}") from None


def selection_size(path: str | Path) -> dict[str, Any] | None:
    """The instance size a selection file was made at (``{"d", "n", "graph_model"}``, as
    ``heuresis baselines --json`` records it), or None when the file does not say."""
    content = _read_selection_file(Path(path))
    size = content.get("size") if isinstance(content, dict) else None
    if size is None:
        return None
    if not (isinstance(size, dict) and {"d", "n"} <= set(size)):
        raise HeuresisError(f"BCA selection file {str(path)!r}: 'size' must hold 'd' and 'n'")
    return {"d": int(size["d"]), "n": int(size["n"]),
            "graph_model": str(size.get("graph_model", "er"))}


def load_bca_selection(path: str | Path) -> dict[str, str]:
    """Family → BCA from a selection file.

    Accepts the JSON ``heuresis baselines --split dev --json FILE`` writes (``{"size": …,
    "tables": [{"family", "bca", ...}, ...]}``) or a plain ``{"bca": {family: algorithm}}``.
    """
    path = Path(path)
    content = _read_selection_file(path)
    mapping: dict[str, str] = {}
    if isinstance(content, dict) and isinstance(content.get("tables"), list):
        for table in content["tables"]:
            if not isinstance(table, dict) or "family" not in table or "bca" not in table:
                raise HeuresisError(f"BCA selection file {str(path)!r}: every table needs "
                                    "'family' and 'bca'")
            mapping[str(table["family"])] = str(table["bca"])
    elif isinstance(content, dict) and isinstance(content.get("bca"), dict):
        mapping = {str(k): str(v) for k, v in content["bca"].items()}
    else:
        raise HeuresisError(f"BCA selection file {str(path)!r} must hold 'tables' (the JSON of "
                            "'heuresis baselines --json') or a 'bca' mapping of family to "
                            "algorithm")
    if not mapping:
        raise HeuresisError(f"BCA selection file {str(path)!r} names no family")
    return mapping


_SELECTIONS: dict[tuple, tuple[str, dict[str, float]]] = {}


def _f1(scores: Mapping[str, Any] | None) -> float:
    """A run's adjacency F1, 0 for a failed run or an undefined F1 (as the reference tables)."""
    if scores is None:
        return 0.0
    return float(np.nan_to_num(scores["f1"], nan=0.0))


def select_bca_on_the_fly(family: str, count: int = DEFAULT_SELECTION_COUNT,
                          algorithms: Sequence[str] | None = None, d: int = 10, n: int = 600,
                          graph_model: str = "er") -> tuple[str, dict[str, float]]:
    """BCA_φ selected on development instances 0..count−1 (cached reference results).

    Returns (the algorithm, mean dev F1 of every candidate). Runs every candidate on every
    instance the first time (minutes for the kernel methods), then reads the disk cache.
    """

    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or not (
            1 <= count <= SPLIT_SIZES["dev"]):
        raise HeuresisError(f"selection_count must be an integer in 1..{SPLIT_SIZES['dev']}, "
                            f"got {count!r}")
    candidates = tuple(REFERENCE_ALGORITHMS if algorithms is None else algorithms)
    if not candidates:
        raise HeuresisError("BCA needs at least one candidate algorithm")
    for name in candidates:
        _check_algorithm(name, None)
    key = (family, int(count), candidates, int(d), int(n), graph_model)
    if key not in _SELECTIONS:
        dev_f1: dict[str, list[float]] = {name: [] for name in candidates}
        for index in range(int(count)):
            instance = generate_instance(InstanceKey(family, "dev", index, d=d, n=n,
                                                     graph_model=graph_model))
            for name in candidates:
                dev_f1[name].append(_f1(reference_record(instance, name).scores))
        _SELECTIONS[key] = (select_bca(dev_f1),
                            {name: float(np.mean(values)) for name, values in dev_f1.items()})
    return _SELECTIONS[key]


class BCAPolicy(AlgorithmPolicy):
    """BCA_φ of the episode's family, then algorithm-as-submission.

    With ``selection_path`` the choice is read from a selection file
    (:func:`load_bca_selection`; a file that records its size refuses episodes of another
    size). With ``shipped=True`` (the ``bca`` entry point) the selection shipped for the
    episode's size is used when there is one (:func:`shipped_selection`). Otherwise BCA is
    selected on the fly on the first ``selection_count`` development instances of the family
    at the episode's d, n and graph model (:func:`select_bca_on_the_fly`, cached). The family
    comes from the reset info's instance key: BCA is a per-family reference, not an agent.
    """

    name = "bca"

    def __init__(self, selection_path: str | Path | None = None,
                 selection_count: int = DEFAULT_SELECTION_COUNT,
                 algorithms: Sequence[str] | None = None, shipped: bool = False):
        self.selection_path = None if selection_path is None else Path(selection_path)
        self.selection = (None if self.selection_path is None
                          else load_bca_selection(self.selection_path))
        self.selection_size = (None if self.selection_path is None
                               else selection_size(self.selection_path))
        self.shipped = bool(shipped) and self.selection_path is None
        if isinstance(selection_count, bool) or not isinstance(selection_count, numbers.Integral) \
                or selection_count < 1:
            raise HeuresisError(f"selection_count must be a positive integer, "
                                f"got {selection_count!r}")
        self.selection_count = int(selection_count)
        if algorithms is not None:
            if isinstance(algorithms, str):
                raise HeuresisError("algorithms must be a list of algorithm names, not one string")
            for algorithm in algorithms:
                _check_algorithm(algorithm, None)
        self.candidates = None if algorithms is None else tuple(algorithms)
        self.algorithm, self.params = "", {}
        self.name = "bca"
        self._stage = "run"
        self.output, self.error = None, None
        self.choice: dict[str, Any] | None = None

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        key = info.get("instance")
        if not isinstance(key, Mapping) or "family" not in key:
            raise HeuresisError("BCAPolicy needs the reset info's 'instance' key (its family)")
        family = str(key["family"])
        size = {"d": int(key.get("d", 10)), "n": int(key.get("n", 600)),
                "graph_model": str(key.get("graph_model", "er"))}
        path, selection = self.selection_path, self.selection
        if path is not None and self.selection_size not in (None, size):
            raise HeuresisError(
                f"the BCA selection {str(path)!r} was made at {_size_text(self.selection_size)}; "
                f"this episode has {_size_text(size)}. BCA_φ is chosen per instance size: give "
                "a selection of this size, or none to select on the fly")
        if path is None and self.shipped:
            path, selection = _shipped_choice(size["d"], size["n"], size["graph_model"])
        if selection is not None:
            if family not in selection:
                raise UnknownNameError(f"family in {path}", family, selection)
            algorithm, means = selection[family], None
        else:
            algorithm, means = select_bca_on_the_fly(
                family, self.selection_count, self.candidates, **size)
        self.algorithm, self.params = _check_algorithm(algorithm, None)
        self.choice = {"kind": "bca_selection", "family": family, "algorithm": algorithm,
                       "source": (str(path) if path is not None
                                  else f"on the fly: {self.selection_count} dev instances"),
                       "size": size, "dev_mean_f1": means}

    def transcript(self) -> list[dict[str, Any]] | None:
        return None if self.choice is None else [dict(self.choice)]


def _size_text(size: Mapping[str, Any] | None) -> str:
    if size is None:
        return "an unrecorded size"
    return f"d={size['d']}, n={size['n']}, {size.get('graph_model', 'er')} graphs"


#: the selections shipped with the package, one per instance size: `heuresis baselines
#: --split test --json` output, BCA chosen on development instances of that size
SHIPPED_SELECTIONS = Path(__file__).resolve().parent / "data"


def shipped_selection(d: int = 10, n: int = 600, graph_model: str = "er") -> Path | None:
    """The shipped selection file made at this size, or None."""
    wanted = {"d": int(d), "n": int(n), "graph_model": str(graph_model)}
    for path in sorted(SHIPPED_SELECTIONS.glob("bca_selection*.json")):
        if selection_size(path) == wanted:
            return path
    return None


@functools.cache
def _shipped_choice(d: int, n: int, graph_model: str) -> tuple[Path | None, dict[str, str] | None]:
    """The shipped selection file of this size and its family → algorithm map (read once per
    process: the files are package data)."""
    path = shipped_selection(d, n, graph_model)
    return path, (None if path is None else load_bca_selection(path))


def bca_policy(selection_path: str | None = None,
               selection_count: int = DEFAULT_SELECTION_COUNT,
               algorithms: Sequence[str] | None = None) -> BCAPolicy:
    """Entry-point factory of :class:`BCAPolicy` (policy ``bca``). Without a selection path
    it uses the selection shipped for the episode's size (d=10 with n=600 or n=200) and
    selects on the fly at other sizes; ``selection_path=""`` always selects on the fly."""
    return BCAPolicy(selection_path=selection_path or None, selection_count=selection_count,
                     algorithms=algorithms, shipped=selection_path is None)


# ---- the ideal oracle ---------------------------------------------------------------------------

class OraclePolicy(ReferencePolicy):
    """The ideal oracle: a reference that knows the truth, so it is not an agent.

    Under ``heuresis evaluate`` the runner hands it the episode's instance on the referee's
    side (:meth:`observe_truth`); used directly (development), it regenerates the instance
    from the reset info's key with ``salt`` (else ``$HEURESIS_TEST_SALT``) for a sealed test
    split. It checks the data hash against the episode's and submits
    :func:`baselines.oracle.ideal_oracle` in one step.
    """

    name = "oracle"
    interface = "text"

    def __init__(self, salt: SaltArgument = None, alpha: float = 0.05):
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1:
            raise HeuresisError(f"alpha must be a number in (0, 1), got {alpha!r}")
        #: the salt given, checked (None: ``$HEURESIS_TEST_SALT`` when an episode needs it)
        self.salt: SaltArgument = salt if salt is None else sealing_salt("test", salt) or ""
        self.alpha = float(alpha)
        self.graph: Graph | None = None
        self._submitted = False
        self.error: str | None = None

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        instance, self.instance = self.instance, None  # the truth given for this episode only
        if instance is None:
            key = info.get("instance")
            if not isinstance(key, Mapping):
                raise HeuresisError("OraclePolicy needs the truth (observe_truth) or the reset "
                                    "info's 'instance' key")
            instance = generate_instance(InstanceKey.from_dict(key), self.salt)
        expected = info.get("sha256")
        if expected is not None and instance.sha256 != expected:
            raise HeuresisError(
                f"OraclePolicy regenerated {instance.key} but its data differ from the "
                "episode's: the test split is sealed with a salt this policy does not know "
                "(pass salt=... or set HEURESIS_TEST_SALT to the environment's salt)")
        self.graph = ideal_oracle(instance, self.alpha)
        self._submitted = False
        self.error = None
        if edge_strings(self.graph) is None:
            self.error = ("the oracle's graph cannot be written as an edge list: the working "
                          "graph was submitted instead")

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self.graph is None:
            raise HeuresisError("OraclePolicy.act called before reset")
        if self._submitted:  # the list was refused (a directed cycle under a dag target)
            self.error = self.error or (f"the oracle's edge list was refused "
                                        f"({info.get('error')}): the working graph was "
                                        "submitted instead")
            return {"tool": "submit", "args": {}}
        self._submitted = True
        return _submit(self.graph)


    def failure(self) -> str | None:
        return self.error


def oracle_policy(salt: SaltArgument = None, alpha: float = 0.05) -> OraclePolicy:
    """Entry-point factory of :class:`OraclePolicy` (policy ``oracle``)."""
    return OraclePolicy(salt=salt, alpha=alpha)


# ---- merge_k -------------------------------------------------------------------------------------

class MergePolicy(Policy):
    """Calls each algorithm with ``run_algorithm`` and submits merge_k of their outputs.

    A failed run counts as the empty graph (as in the reference tables). When the step budget
    would run out first, it submits the merge of the outputs it has, with k clipped to their
    number. A failed or skipped run, or a refused submission, is the episode's
    :meth:`failure`.
    """

    interface = "text"

    def __init__(self, algorithms: Sequence[str], k: int,
                 params: Mapping[str, Mapping[str, Any]] | None = None):
        if isinstance(algorithms, str) or not isinstance(algorithms, Sequence) or not algorithms:
            raise HeuresisError(f"algorithms must be a non-empty list of algorithm names, "
                                f"got {algorithms!r}")
        params = dict(params or {})
        unknown = sorted(set(params) - set(algorithms))
        if unknown:
            raise HeuresisError(f"params given for algorithms not in the list: {unknown}; "
                                f"the list is {list(algorithms)}")
        self.algorithms = [_check_algorithm(a, params.get(a)) for a in algorithms]
        names = [a for a, _ in self.algorithms]
        if len(set(names)) != len(names):
            raise HeuresisError(f"algorithms are repeated: "
                                f"{sorted({a for a in names if names.count(a) > 1})}")
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= len(names):
            raise HeuresisError(f"k must be an integer in 1..{len(names)} (the number of "
                                f"algorithms), got {k!r}")
        self.k = int(k)
        self.name = f"merge-{self.k}"
        self.outputs: list[Graph] = []
        self.failures: dict[str, str] = {}
        self.refused: str | None = None
        self._next = 0
        self._names: tuple[str, ...] = ()
        self._submitted = False

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        if "names" not in info:
            raise HeuresisError("MergePolicy needs the reset info's 'names'")
        self._names = tuple(info["names"])
        self.outputs, self.failures = [], {}
        self._next = 0
        self._submitted = False
        self.refused = None

    def merged(self) -> Graph | None:
        """merge_k of the outputs so far (k clipped to their number); None before the first."""

        if not self.outputs:
            return None
        return merge_k(self.outputs, min(self.k, len(self.outputs)))

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self._submitted:  # the merged list was refused
            self.refused = f"the merged edge list was refused ({info.get('error')})"
            return {"tool": "submit", "args": {}}
        if self._next > 0 and len(self.outputs) < self._next:
            name = self.algorithms[self._next - 1][0]
            data = info.get("data") or {}
            if info.get("error") is None and data.get("graph") is not None:
                self.outputs.append(Graph.from_dict(data["graph"]))
            else:
                self.failures[name] = str(info.get("error"))
                self.outputs.append(Graph(self._names))
        if self._next < len(self.algorithms) and _budget_left(observation) >= 2:
            name, params = self.algorithms[self._next]
            self._next += 1
            return {"tool": "run_algorithm", "args": {"name": name, "params": params}}
        self._submitted = True
        return _submit(self.merged())

    def failure(self) -> str | None:
        reasons = [f"run_algorithm {name} failed: {error}"
                   for name, error in self.failures.items()]
        skipped = [name for name, _ in self.algorithms[self._next:]]
        if skipped:
            reasons.append(f"the step budget left no room to run {', '.join(skipped)}")
        if self.refused:
            reasons.append(self.refused)
        return "; ".join(reasons) or None

    def transcript(self) -> list[dict[str, Any]] | None:
        return [{"kind": "merge", "k": self.k,
                 "algorithms": [a for a, _ in self.algorithms[:len(self.outputs)]],
                 "failures": dict(self.failures)}]


def merge_policy(algorithms: Sequence[str], k: int,
                 params: Mapping[str, Mapping[str, Any]] | None = None) -> MergePolicy:
    """Entry-point factory of :class:`MergePolicy` (policy ``merge``)."""
    return MergePolicy(algorithms, k, params)
