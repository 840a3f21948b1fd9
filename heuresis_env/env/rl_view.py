"""The RL view: flat ``Dict`` observations of ``MultiBinary``/``Box`` and a ``Discrete`` action.

``gym.make("Heuresis-lg-v0", interface="rl")`` builds it. The action table is derived from
the tool registry (:func:`rl_action_table`): for every
unordered pair an ``add`` (the undirected edge, ``add_edge(x, y, directed=False)``), a
``remove`` and a ``test`` (``ci_test`` with KCI at the set where PC-Fisher-z deleted the pair,
or the empty set), for every ordered pair an ``orient`` (``orient_edge(x, y)``), and one
``submit``. Each action runs the same index kernel as the matching text-view tool, so the
graphs of the two views never disagree; ``test`` reads the instance's cached evidence.

Observation keys, every one a 1-D vector as stable-baselines3's default policies expect
(p = d(d−1)/2 unordered pairs in the order (0,1), (0,2), …; :meth:`RLInterface.unflatten`
gives the matrix views):

- ``adjacency`` — ``MultiBinary(d·d)``, row-major: entry ``i·d + j`` is 1 when the working
  graph has i → j or i — j (an undirected edge sets both entries);
- ``evidence`` — ``Box(−1, 1, (p·7,))``, pair-major: entry ``k·7 + f`` is feature f (the
  columns of :data:`heuresis_env.evidence.FEATURE_NAMES`) of pair k; a missing entry is 0;
- ``evidence_available`` — ``MultiBinary(p·7)``: which entries exist (a pair PC kept has no
  deletion p-value; the KCI p-value appears once the pair is tested; the PC-KCI deletion
  p-value only in the guided condition);
- ``budget_left`` — ``Box(0, 1, (1,))``: the fraction of the step budget left;
- ``repair`` — ``Box(−1, 1, (p·R,))``, pair-major: the repair table
  (:mod:`heuresis_env.evidence.repair`, R = ``len(REPAIR_FEATURE_NAMES)`` columns) scaled by
  :meth:`~heuresis_env.evidence.RepairEvidence.observation`; 0 where missing;
- ``repair_available`` — ``MultiBinary(p·R)``: which repair entries exist (none in an
  unguided episode: the table describes PC-KCI's output, the guided start).

The observation layout is versioned (:data:`RL_OBSERVATION_LAYOUT`): layout 1 had the first
four keys only; layout 2 added ``repair`` and ``repair_available``. The layout-1 keys are
unchanged, so a model trained on layout 1 reads a layout-2 observation restricted to them.

:meth:`RLInterface.action_masks` marks the valid actions (add only between non-adjacent
variables, remove/orient only on edges, no orientation that closes a directed cycle under the
cpdag and dag targets, each pair tested once). The step path allocates only the small
observation arrays and formats no text unless a trace or ``render_mode="ansi"`` asks for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium import spaces

from heuresis_env.env.toolbox.graph_tools import ACYCLIC_TARGETS, graph_summary
from heuresis_env.env.toolbox.registry import (
    RL_EXPERIMENT_OPERATIONS,
    RL_OPERATIONS,
    TOOLS,
    RLSpec,
    Tool,
    describe_object,
)
from heuresis_env.env.toolbox.state import EpisodeState
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.evidence import (
    DEFERRED_FEATURES,
    FEATURE_NAMES,
    REPAIR_FEATURE_NAMES,
    EvidenceProvider,
    PairEvidence,
    PairTable,
    unordered_pairs,
)
from heuresis_env.graphs import EdgeMark

NONE, TAIL, ARROW = int(EdgeMark.NONE), int(EdgeMark.TAIL), int(EdgeMark.ARROW)
#: version of the observation layout: 1 = adjacency, evidence, evidence_available,
#: budget_left; 2 = those plus repair and repair_available (the repair table)
RL_OBSERVATION_LAYOUT = 2
#: the observation keys of each layout version
LAYOUT_KEYS: dict[int, tuple[str, ...]] = {
    1: ("adjacency", "evidence", "evidence_available", "budget_left"),
    2: ("adjacency", "evidence", "evidence_available", "budget_left", "repair",
        "repair_available"),
}
#: how the RL view gets its pair evidence: "eager" reads (or computes) the whole table at
#: reset; "lazy" computes the cheap columns at reset and a pair's others when it is tested
RL_EVIDENCE_MODES = ("eager", "lazy")
_KCI_COLUMN = FEATURE_NAMES.index("kci_p_at_deleting_set")
_GUIDED_COLUMN = FEATURE_NAMES.index("kci_deletion_p")


@dataclass(frozen=True)
class RLAction:
    """One entry of the RL view's action table: an operation on variables i and j (−1: none)."""

    index: int
    operation: str
    tool: str
    i: int
    j: int


def rl_action_table(d: int, tools: Iterable[Tool] | None = None) -> tuple[RLAction, ...]:
    """Derive the discrete action table from the tools' :class:`RLSpec`.

    Operations appear in :data:`RL_OPERATIONS` order; within one, unordered pairs run
    (0,1), (0,2), …, (d−2,d−1) and ordered pairs row by row. Each operation must be provided
    by exactly one tool. An operation of :data:`RL_EXPERIMENT_OPERATIONS` (``intervene``, one
    action per variable) follows when one of ``tools`` provides it, so the observational
    table is unchanged.
    """
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 2:
        raise HeuresisError(f"the RL action table needs d ≥ 2 variables, got {d!r}")
    tools = [t for t in TOOLS.values() if not t.experiments_only] if tools is None \
        else list(tools)
    provider: dict[str, Tool] = {}
    for tool in tools:
        if tool.rl is None:
            continue
        if tool.rl.operation in provider:
            raise HeuresisError(f"RL operation {tool.rl.operation!r} is provided by both "
                                f"{provider[tool.rl.operation].name!r} and {tool.name!r}")
        provider[tool.rl.operation] = tool
    missing = [op for op in RL_OPERATIONS if op not in provider]
    if missing:
        raise HeuresisError(f"no tool provides the RL operation(s) {missing}")
    table: list[RLAction] = []
    operations = (*RL_OPERATIONS, *(op for op in RL_EXPERIMENT_OPERATIONS if op in provider))
    for operation in operations:
        tool = provider[operation]
        assert tool.rl is not None  # a provider of an RL operation has its RLSpec
        if tool.rl.pairs == "unordered":
            pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
        elif tool.rl.pairs == "ordered":
            pairs = [(i, j) for i in range(d) for j in range(d) if i != j]
        elif tool.rl.pairs == "variable":
            pairs = [(i, -1) for i in range(d)]
        else:
            pairs = [(-1, -1)]
        for i, j in pairs:
            table.append(RLAction(len(table), operation, tool.name, i, j))
    return tuple(table)


@dataclass
class RLOutcome:
    """What one discrete action did (the environment turns it into reward and info)."""

    operation: str
    tool: str
    i: int
    j: int
    error: str | None = None
    index: int | None = None  # the action's index in the table (None: not a valid index)
    submitted: bool = False
    reward: float = 0.0
    arguments: dict[str, Any] | None = None
    diff: list[dict[str, Any]] = field(default_factory=list)
    before: str | None = None
    result_text: str | None = None


def action_index(action: Any) -> int | None:
    """An integer action (Python or NumPy integer, or a 0-d/1-element integer array); None
    for anything else, whatever the object does."""
    if type(action) is int:
        return action
    try:
        if isinstance(action, np.integer):
            return int(action)
        if type(action) is np.ndarray and action.size == 1 and action.dtype.kind in "iu":
            return int(action.reshape(()))
    except Exception:  # noqa: BLE001 - a hostile subclass is an invalid action
        return None
    return None


def transitive_closure(directed: np.ndarray) -> np.ndarray:
    """Reachability by directed paths of length ≥ 1 (float32 0/1 matrix, repeated squaring)."""
    reach = directed.astype(np.float32)
    for _ in range(max(1, int(directed.shape[0] - 1).bit_length())):
        reach = np.minimum(reach + reach @ reach, 1.0)
    return reach


class RLInterface:
    """Spaces, masks and the step kernel of the RL view for one (d, toolbox, target, guided)."""

    def __init__(self, d: int, tools: Sequence[Tool], target: str, guided: bool,
                 evidence_mode: str = "eager"):
        if evidence_mode not in RL_EVIDENCE_MODES:
            raise UnknownNameError("RL evidence mode", evidence_mode, RL_EVIDENCE_MODES)
        self.evidence_mode = evidence_mode
        self.d = d
        self.target = target
        self.guided = guided
        self.table = rl_action_table(d, tools)
        self.n_actions = len(self.table)
        self._operation = [a.operation for a in self.table]
        self._i = [a.i for a in self.table]
        self._j = [a.j for a in self.table]
        self._tools = {op: next(t for t in tools if t.rl is not None and t.rl.operation == op)
                       for op in dict.fromkeys(self._operation)}
        #: an experiment budget: the intervene actions and the experiment keys are there
        self.experiments = "intervene" in self._tools
        self._specs: dict[str, RLSpec] = {op: tool.rl for op, tool in self._tools.items()
                                          if tool.rl is not None}
        self._apply: dict[str, Callable] = {op: spec.apply for op, spec in self._specs.items()
                                            if spec.apply is not None}
        self._slices: dict[str, slice] = {}
        for index, op in enumerate(self._operation):  # each operation's rows are contiguous
            first = self._slices[op].start if op in self._slices else index
            self._slices[op] = slice(first, index + 1)
        pairs = unordered_pairs(d)
        self.n_pairs = len(pairs)
        self._pair_i, self._pair_j = pairs[:, 0].copy(), pairs[:, 1].copy()
        self._pair_row = np.full((d, d), -1, dtype=np.int64)
        self._pair_row[self._pair_i, self._pair_j] = np.arange(self.n_pairs)
        self._pair_row[self._pair_j, self._pair_i] = np.arange(self.n_pairs)
        orient = self.table[self._slices["orient"]]
        self._orient_i = np.array([a.i for a in orient], dtype=np.int64)
        self._orient_j = np.array([a.j for a in orient], dtype=np.int64)
        # flat indices into a d × d matrix, so each mask part is one gather
        self._pair_flat = self._pair_i * d + self._pair_j
        self._orient_flat = self._orient_i * d + self._orient_j
        self._orient_flat_back = self._orient_j * d + self._orient_i
        n_features = len(FEATURE_NAMES)
        self.action_space = spaces.Discrete(self.n_actions)
        self.n_features = n_features
        self.n_repair_features = len(REPAIR_FEATURE_NAMES)
        repair_size = self.n_pairs * self.n_repair_features
        self.observation_space = spaces.Dict({
            "adjacency": spaces.MultiBinary(d * d),
            "evidence": spaces.Box(-1.0, 1.0, (self.n_pairs * n_features,), np.float32),
            "evidence_available": spaces.MultiBinary(self.n_pairs * n_features),
            "budget_left": spaces.Box(0.0, 1.0, (1,), np.float32),
            "repair": spaces.Box(-1.0, 1.0, (repair_size,), np.float32),
            "repair_available": spaces.MultiBinary(repair_size),
        })
        if self.experiments:
            self.observation_space = spaces.Dict({
                **self.observation_space.spaces,
                "shift": spaces.Box(0.0, 1.0, (d * d,), np.float32),
                "shift_available": spaces.MultiBinary(d * d),
                "experiment_budget_left": spaces.Box(0.0, 1.0, (1,), np.float32),
            })
        self._no_repair = (np.zeros(repair_size, dtype=np.float32),
                           np.zeros(repair_size, dtype=np.int8))
        self._mask: np.ndarray | None = None
        self._prepared: dict[tuple, tuple] = {}  # per instance: the observation's static part
        self._deferred_columns = [FEATURE_NAMES.index(name) for name in DEFERRED_FEATURES
                                  if name != "kci_p_at_deleting_set"]
        self._table: PairTable | None = None
        self._pairs: PairEvidence | None = None

    # ---- episode start ------------------------------------------------------------------
    def start(self, state: EpisodeState, evidence: EvidenceProvider,
              referee: dict[str, Callable], shaped: bool) -> None:
        """Begin an episode on the instance whose evidence ``evidence`` serves.

        Eager: the whole pair table (and, guided, the repair table) is read or computed now.
        Lazy: only the cheap columns (:data:`~heuresis_env.evidence.CHEAP_FEATURES`); a
        pair's other columns and its repair row are computed when the pair is tested.
        """
        if self.evidence_mode == "eager":
            pairs = evidence.pair_evidence()
            repair = evidence.repair_evidence() if self.guided else None
            key: tuple = ("eager", evidence.sha256)
            prepared = self._prepared.get(key)
            if prepared is None or prepared[0] is not pairs or prepared[5] is not repair:
                values, available, kci_values, kci_available = self._prepare_values(
                    pairs.feature_matrix())
                if repair is not None:
                    repair_values, repair_available = repair.observation()
                    repair_part = (repair_values.astype(np.float32).reshape(-1),
                                   repair_available.astype(np.int8).reshape(-1))
                else:
                    repair_part = self._no_repair
                prepared = (pairs, values, available, kci_values, kci_available, repair,
                            repair_part)
            self._pairs, self._table = pairs, None
        else:
            table = evidence.pair_table()
            if self.guided:
                table.add_guided(evidence.guided_start())
            key = ("lazy", evidence.sha256)
            prepared = self._prepared.get(key)
            if prepared is None or prepared[0] is not table:
                values, available, kci_values, kci_available = self._prepare_values(
                    table.cheap_matrix())
                prepared = (table, values, available, kci_values, kci_available, None,
                            self._no_repair)
            self._pairs, self._table = None, table
        if len(self._prepared) > 64:
            self._prepared.clear()
        self._prepared[key] = prepared
        _, values, available, self._kci_values, self._kci_available, _, repair_part = prepared
        self._repair_values, self._repair_available = repair_part
        if self._table is not None:  # a lazy episode fills these as pairs are tested
            self._kci_values = self._kci_values.copy()
            self._kci_available = self._kci_available.copy()
            self._repair_values = self._repair_values.copy()
            self._repair_available = self._repair_available.copy()
        self._provider = evidence
        self._values = values.copy()
        self._available = available.copy()
        self._tested = np.zeros(self.n_pairs, dtype=bool)
        if self.experiments:
            self._shift = np.zeros((self.d, self.d), dtype=np.float32)
            self._shift_available = np.zeros((self.d, self.d), dtype=np.int8)
        self._mask = None
        self._reach: np.ndarray | None = None  # reachability of the directed part, kept up to date when cheap
        self._shaped = shaped
        if shaped:
            self._f1_of_marks = referee["f1_of_marks"]
            self._f1_from_counts = referee["f1_from_counts"]
            self._is_true_pair = referee["is_true_pair"]
            _, self._true_positives, self._n_predicted = referee["f1_of_marks"](
                state.working_graph.marks)

    def _prepare_values(self, matrix: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The observation's evidence part from a feature matrix (nan: missing): values in
        [−1, 1] with 0 where missing and availability, the KCI column held back until the
        pair is tested (its values and availability apart), the guided column only guided."""
        values = np.array(matrix, dtype=np.float64, ndmin=2)
        available = ~np.isnan(values)
        if not self.guided:
            available[:, _GUIDED_COLUMN] = False
        kci_values = np.clip(np.nan_to_num(values[:, _KCI_COLUMN]), 0.0, 1.0)
        kci_available = available[:, _KCI_COLUMN].copy()
        available[:, _KCI_COLUMN] = False
        values = np.where(available, np.clip(np.nan_to_num(values), -1, 1), 0.0)
        return (values.astype(np.float32), available.astype(np.int8), kci_values,
                kci_available)

    def _reveal_pair(self, row: int) -> None:
        """A lazy episode's test of pair ``row``: compute (or read) its deferred columns and,
        guided, its repair row, and show them as the eager view shows them."""
        assert self._table is not None
        values, available, kci_values, kci_available = self._prepare_values(
            self._table.row(row)[None, :])
        deferred = self._deferred_columns
        self._values[row, deferred] = values[0, deferred]
        self._available[row, deferred] = available[0, deferred]
        self._kci_values[row] = kci_values[0]
        self._kci_available[row] = kci_available[0]
        if self.guided:
            repair_values, repair_available = self._repair_observation()
            width = self.n_repair_features
            part = slice(row * width, (row + 1) * width)
            self._repair_values[part] = repair_values[part]
            self._repair_available[part] = repair_available[part]

    def _repair_observation(self) -> tuple[np.ndarray, np.ndarray]:
        """The instance's whole repair table as the observation shows it (computed or read
        once per instance: the repair table has no per-pair path)."""
        key = ("repair", self._provider.sha256)
        prepared = self._prepared.get(key)
        repair = self._provider.repair_evidence()
        if prepared is None or prepared[0] is not repair:
            values, available = repair.observation()
            prepared = (repair, values.astype(np.float32).reshape(-1),
                        available.astype(np.int8).reshape(-1))
            self._prepared[key] = prepared
        return prepared[1], prepared[2]

    def _test_set(self, row: int) -> tuple[int, ...]:
        """The set the test action tests pair ``row`` at."""
        if self._table is not None:
            return self._table.conditioning_set(row)
        assert self._pairs is not None
        return tuple(self._pairs.kci_conditioning_sets[row])

    def _test_p(self, row: int) -> float:
        if self._table is not None:
            return float(self._table.row(row)[_KCI_COLUMN])
        assert self._pairs is not None
        return float(self._pairs.kci_p_at_deleting_set[row])

    # ---- observations and masks ------------------------------------------------------------
    def observation(self, state: EpisodeState, steps_left: int, max_steps: int) -> dict:
        marks = state.working_graph.marks
        observation = {
            "adjacency": (marks.T == TAIL).astype(np.int8).reshape(-1),
            "evidence": self._values.reshape(-1).copy(),
            "evidence_available": self._available.reshape(-1).copy(),
            "budget_left": np.array([max(steps_left, 0) / max_steps], dtype=np.float32),
            "repair": self._repair_values.copy(),
            "repair_available": self._repair_available.copy(),
        }
        if self.experiments:
            regimes = state.require_regimes()
            observation.update(
                shift=self._shift.reshape(-1).copy(),
                shift_available=self._shift_available.reshape(-1).copy(),
                experiment_budget_left=np.array(
                    [regimes.rows_left / max(regimes.budget, 1)], dtype=np.float32))
        return observation

    def unflatten(self, observation: dict) -> dict:
        """Matrix views of an observation: adjacency (d, d), evidence (p, 7), availability,
        repair (p, R) and its availability."""
        shape = (self.n_pairs, self.n_repair_features)
        return {
            "repair": np.asarray(observation["repair"]).reshape(shape),
            "repair_available": np.asarray(observation["repair_available"]).reshape(shape),
            "adjacency": np.asarray(observation["adjacency"]).reshape(self.d, self.d),
            "evidence": np.asarray(observation["evidence"]).reshape(self.n_pairs,
                                                                    self.n_features),
            "evidence_available": np.asarray(observation["evidence_available"]).reshape(
                self.n_pairs, self.n_features),
            "budget_left": np.asarray(observation["budget_left"]),
            **({} if not self.experiments else {
                "shift": np.asarray(observation["shift"]).reshape(self.d, self.d),
                "shift_available": np.asarray(observation["shift_available"]).reshape(
                    self.d, self.d)}),
        }

    def action_masks(self, state: EpisodeState) -> np.ndarray:
        if self._mask is None:
            self._mask = self._compute_mask(state.working_graph.marks, state)
        return self._mask.copy()

    def _experiment_rows(self, state: EpisodeState) -> int:
        """Rows one intervene action draws (the tool's default, or the budget if smaller)."""
        return int(self._specs["intervene"].make_args(state, 0, -1)["n"])

    def _compute_mask(self, marks: np.ndarray, state: EpisodeState) -> np.ndarray:
        mask = np.empty(self.n_actions, dtype=bool)
        flat = marks.reshape(-1)
        adjacent = flat[self._pair_flat] != NONE
        mask[self._slices["add"]] = ~adjacent
        mask[self._slices["remove"]] = adjacent
        forward = flat[self._orient_flat]
        backward = flat[self._orient_flat_back]
        valid = (forward != NONE) & ~((forward == ARROW) & (backward == TAIL))
        if self.target in ACYCLIC_TARGETS:
            directed = (marks == ARROW) & (marks.T == TAIL)
            if directed.any():
                if self._reach is None:
                    self._reach = transitive_closure(directed)
                reach = self._reach
                # reversing j -> i closes a cycle iff another path j -> c ~> i exists;
                # orienting any other edge i - j closes one iff j ~> i already
                via_other = (directed.astype(np.float32) @ reach).reshape(-1)
                back_flat = self._orient_flat_back
                is_reversal = directed.reshape(-1)[back_flat]
                closes = np.where(is_reversal, via_other[back_flat],
                                  reach.reshape(-1)[back_flat]) > 0
                valid &= ~closes
        mask[self._slices["orient"]] = valid
        mask[self._slices["test"]] = ~self._tested
        mask[self._slices["submit"]] = True
        if self.experiments:
            mask[self._slices["intervene"]] = (
                state.require_regimes().rows_left >= self._experiment_rows(state))
        return mask

    # ---- one action ----------------------------------------------------------------------------
    def execute(self, state: EpisodeState, action: Any, record: bool = False) -> RLOutcome:
        """Run one action. Validity is decided by :meth:`action_masks` alone: an action the
        mask rules out (out of range, not an integer, or masked) is an error step that changes
        nothing, so the step and the mask cannot disagree."""
        index = action_index(action)
        if index is None:
            return RLOutcome("invalid", "", -1, -1, error=(
                f"an RL action is an integer in 0..{self.n_actions - 1}, got "
                f"{describe_object(action, 200)}"))
        if not 0 <= index < self.n_actions:
            return RLOutcome("invalid", "", -1, -1, error=(
                f"RL action {index} is out of range 0..{self.n_actions - 1}"))
        operation, i, j = self._operation[index], self._i[index], self._j[index]
        outcome = RLOutcome(operation, self._tools[operation].name, i, j, index=index)
        if record:
            outcome.arguments = self._specs[operation].make_args(state, i, j)
            if i >= 0 and j >= 0:
                outcome.before = state.edge_text(i, j)
        if self._mask is None:
            self._mask = self._compute_mask(state.working_graph.marks, state)
        if not self._mask[index]:
            outcome.error = self._masked_reason(state, operation, i, j, index)
            return outcome
        if operation == "submit":
            outcome.submitted = True
        elif operation == "intervene":
            self._intervene(state, i, outcome)
        elif operation == "test":
            row = self._pair_row[i, j]
            if self._table is not None:
                self._reveal_pair(row)
            if self._kci_available[row]:
                self._values[row, _KCI_COLUMN] = self._kci_values[row]
                self._available[row, _KCI_COLUMN] = 1
            self._tested[row] = True
            self._mask[self._slices["test"].start + row] = False
        else:
            marks = state.working_graph.marks
            was_adjacent = marks[i, j] != NONE
            forward_before, backward_before = marks[i, j], marks[j, i]
            outcome.error = self._apply[operation](state, i, j)
            if outcome.error is None:
                self._mask = None
                if self._reach is not None:
                    self._update_reach(i, j, forward_before, backward_before, marks)
                now_adjacent = marks[i, j] != NONE
                if self._shaped and was_adjacent != now_adjacent:
                    old = self._f1_from_counts(self._true_positives, self._n_predicted)
                    step = 1 if now_adjacent else -1
                    self._n_predicted += step
                    if self._is_true_pair(i, j):
                        self._true_positives += step
                    outcome.reward = self._f1_from_counts(
                        self._true_positives, self._n_predicted) - old
                if record:
                    outcome.diff = [{"pair": [state.names[i], state.names[j]],
                                     "before": outcome.before, "after": state.edge_text(i, j)}]
        return outcome

    def _intervene(self, state: EpisodeState, i: int, outcome: RLOutcome) -> None:
        """Run the experiment on variable i through the intervene tool (the text view's call)
        and show, for every column j, how strongly it moved: 1 − its Holm-corrected p-value
        (the largest over the experiments on i); the target's own entry stays missing."""
        tool = self._tools["intervene"]
        arguments = self._specs["intervene"].make_args(state, i, -1)
        try:
            result = tool.run(state, tool.arguments(True).model_validate(arguments))
        except HeuresisError as exc:
            outcome.error = str(exc)
            return
        outcome.arguments = arguments
        outcome.result_text = result.text
        for name, entry in result.data["columns"].items():
            j = state.names.index(name)
            if j == i or "p_holm" not in entry:
                continue
            self._shift[i, j] = max(self._shift[i, j], 1.0 - float(entry["p_holm"]))
            self._shift_available[i, j] = 1
        self._mask = None

    def _masked_reason(self, state: EpisodeState, operation: str, i: int, j: int,
                       index: int) -> str:
        """Why :meth:`action_masks` rules out action ``index`` (the text of its error step)."""
        if operation == "intervene":
            regimes = state.require_regimes()
            return (f"RL action {index} (intervene {state.names[i]}) is masked out: an "
                    f"experiment draws {self._experiment_rows(state)} rows and the experiment "
                    f"budget has {regimes.rows_left} of {regimes.budget} left; "
                    "env.action_masks() lists the valid actions")
        x, y = state.names[i], state.names[j]
        if operation == "add":
            why = f"{x} and {y} are already adjacent ({state.edge_text(i, j)})"
        elif operation == "remove":
            why = f"{x} and {y} are not adjacent"
        elif operation == "test":
            why = f"the pair {x}, {y} was already tested in this episode"
        else:
            marks = state.working_graph.marks
            if marks[i, j] == NONE:
                why = f"{x} and {y} are not adjacent"
            elif marks[i, j] == ARROW and marks[j, i] == TAIL:
                why = f"the edge is already oriented {x} --> {y}"
            else:
                why = f"orienting {x} --> {y} would close a directed cycle"
        return (f"RL action {index} ({operation} {x}, {y}) is masked out: {why}; "
                "env.action_masks() lists the valid actions")

    def resynchronize(self, state: EpisodeState) -> None:
        """Recompute what the step path keeps incrementally (mask, reachability, the shaped
        reward's counts) from the working graph, after the environment restored it."""
        self._mask = None
        self._reach = None
        if self._shaped:
            _, self._true_positives, self._n_predicted = self._f1_of_marks(
                state.working_graph.marks)

    def _update_reach(self, i: int, j: int, forward_before: int, backward_before: int,
                      marks: np.ndarray) -> None:
        """Keep the reachability matrix after an edit of pair (i, j), or drop it.

        A new directed edge u → v only adds paths: every ancestor of u (and u) now reaches
        every descendant of v (and v). Losing a directed edge can cut paths, so the matrix is
        recomputed at the next mask.
        """
        def arrow(a: int, b: int) -> bool:  # a → b, given the marks at b's and a's ends
            return a == ARROW and b == TAIL

        before = (arrow(forward_before, backward_before), arrow(backward_before, forward_before))
        after = (arrow(marks[i, j], marks[j, i]), arrow(marks[j, i], marks[i, j]))
        if before == after:
            return
        if before[0] or before[1]:
            self._reach = None
            return
        u, v = (i, j) if after[0] else (j, i)
        reach = self._reach
        if reach is None:  # not computed yet: the next mask computes it
            return
        sources = reach[:, u].copy()
        sources[u] = 1.0
        targets = reach[v, :].copy()
        targets[v] = 1.0
        np.maximum(reach, np.multiply.outer(sources, targets), out=reach)

    def describe(self, state: EpisodeState, outcome: RLOutcome) -> str:
        """The text a text-view agent would read for this action (for traces and ansi)."""
        if outcome.error is not None:
            return f"Error: {outcome.error}"
        names = state.names
        if outcome.operation == "submit":
            return (f"Submitted the working graph: {graph_summary(state.working_graph)}. "
                    "The episode is over.")
        if outcome.operation == "intervene":
            return outcome.result_text or ""
        x, y = names[outcome.i], names[outcome.j]
        if outcome.operation == "test":
            row = self._pair_row[outcome.i, outcome.j]
            given = [names[k] for k in self._test_set(row)]
            condition = f" | {{{', '.join(given)}}}" if given else ""
            return f"{x} _||_ {y}{condition} by kci: p-value {self._test_p(row):.4g}."
        edge = state.edge_text(outcome.i, outcome.j)
        verb = {"add": f"Added {edge}.", "remove": f"Removed the edge between {x} and {y}.",
                "orient": f"Oriented the edge as {edge}."}[outcome.operation]
        return f"{verb} The working graph has {graph_summary(state.working_graph)}."
