"""The exact answers of the question kinds, from the hidden DAG and SCM (never from data).

Graphs are boolean adjacency matrices (``dag[i, j]`` is True for i → j) over column indices.

- independence kinds: d-separation (Bayes-ball, :func:`~heuresis_env.discovery.citests.
  dseparation.d_separated`);
- direct cause: the edge x → y; collider: an unshielded collider x → z ← y; confounding: a
  common cause, i.e. an open back-door path x ← … ← m → … → y given ∅
  (:func:`heuresis_env.graphs.backdoor_path`);
- graphs: the latent projection onto a subset S — the pairs of S that no subset of S
  d-separates (the adjacencies of the maximal ancestral graph over S) and its unshielded
  colliders (a triple is one exactly when its middle node is in no separating set within S;
  in an ancestral graph the middle node is in all or none of them). With S = every variable
  this is the Markov equivalence class of the DAG: its skeleton and v-structures;
- the average effect: E[y | do(x = b)] − E[y | do(x = a)] by Monte Carlo on the SCM, with the
  same exogenous noise under both interventions (common random numbers) and batches added
  until the standard error is below a fraction of the estimate.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from heuresis_env.discovery.citests.dseparation import d_separated
from heuresis_env.errors import HeuresisError
from heuresis_env.generation.scm import SCM
from heuresis_env.graphs import EdgeMark, Graph, backdoor_path
from heuresis_env.metrics import adjacency_scores

#: the Monte Carlo effect stops when its standard error is below this fraction of |effect|
EFFECT_RELATIVE_SE = 0.01
#: rows per Monte Carlo batch (each batch samples both interventions)
EFFECT_BATCH_ROWS = 25_000
#: the most rows a Monte Carlo effect may use before it is declared unconverged
EFFECT_MAX_ROWS = 200_000


# ---- variable and edge levels ----------------------------------------------------------------

def _parents_children(dag: np.ndarray) -> tuple[list[list[int]], list[list[int]]]:
    d = dag.shape[0]
    return ([np.flatnonzero(dag[:, v]).tolist() for v in range(d)],
            [np.flatnonzero(dag[v]).tolist() for v in range(d)])


def is_d_separated(dag: np.ndarray, x: int, y: int, given: Sequence[int] = ()) -> bool:
    """True when ``given`` d-separates x and y in the DAG."""
    if x == y or x in given or y in given:
        raise HeuresisError("d-separation needs two distinct variables outside the "
                            "conditioning set")
    parents, children = _parents_children(np.asarray(dag, dtype=bool))
    return d_separated(parents, children, x, y, tuple(given))


def is_direct_cause(dag: np.ndarray, x: int, y: int) -> bool:
    """True when the DAG has the edge x → y."""
    return bool(dag[x, y])


def unshielded_colliders(dag: np.ndarray, x: int, y: int) -> list[int]:
    """The z with x → z ← y, when x and y are not adjacent (else none: the collider is
    shielded)."""
    if dag[x, y] or dag[y, x]:
        return []
    return [int(z) for z in np.flatnonzero(dag[x] & dag[y])]


def has_common_cause(dag: np.ndarray, x: int, y: int) -> bool:
    """True when an open back-door path x ← … ← m → … → y exists given the empty set."""
    return backdoor_path(np.asarray(dag, dtype=bool), x, y) is not None


def ancestors(dag: np.ndarray, node: int) -> set[int]:
    """The strict ancestors of ``node``."""
    found: set[int] = set()
    stack = [node]
    while stack:
        for parent in np.flatnonzero(dag[:, stack.pop()]).tolist():
            if parent not in found:
                found.add(parent)
                stack.append(parent)
    return found


# ---- graph level -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class GraphTarget:
    """The answer of a graph question: adjacencies and unshielded colliders over ``variables``.

    ``adjacent`` is a symmetric k × k boolean matrix over ``variables`` (column indices, in
    the question's order); ``colliders`` holds triples (a, c, b) of positions in
    ``variables`` with a < b: a *-> c <-* b, a and b not adjacent.
    """

    variables: tuple[int, ...]
    adjacent: np.ndarray
    colliders: frozenset[tuple[int, int, int]]

    @property
    def n_edges(self) -> int:
        return int(np.count_nonzero(np.triu(self.adjacent, 1)))

    def marks(self) -> np.ndarray:
        """The target as a mark matrix (``marks[i, j]`` at j's end): an arrowhead where an
        edge enters a collider, a tail elsewhere (two arrowheads read as ``<->``)."""
        marks = np.where(self.adjacent, int(EdgeMark.TAIL), int(EdgeMark.NONE)).astype(np.int8)
        for a, c, b in self.colliders:
            marks[a, c] = marks[b, c] = int(EdgeMark.ARROW)
        return marks

    def to_dict(self) -> dict:
        return {"variables": list(self.variables),
                "adjacent": self.adjacent.astype(int).tolist(),
                "colliders": sorted(list(t) for t in self.colliders)}


def latent_projection(dag: np.ndarray, variables: Sequence[int]) -> GraphTarget:
    """Adjacencies and unshielded colliders among ``variables``, the others unobserved.

    Two variables are adjacent when no subset of the other chosen variables d-separates
    them; a non-adjacent pair's common neighbour c is a collider when c is in none of the
    pair's separating sets. Exact, by enumeration (meant for subsets of up to ~12 variables).
    """
    dag = np.asarray(dag, dtype=bool)
    variables = tuple(int(v) for v in variables)
    if len(set(variables)) != len(variables) or len(variables) < 2:
        raise HeuresisError(f"a graph question needs at least 2 distinct variables, "
                            f"got {list(variables)}")
    parents, children = _parents_children(dag)
    k = len(variables)
    adjacent = np.zeros((k, k), dtype=bool)
    separating: dict[tuple[int, int], list[set[int]]] = {}
    for a, b in itertools.combinations(range(k), 2):
        others = [p for p in range(k) if p not in (a, b)]
        found = []
        for size in range(len(others) + 1):
            for subset in itertools.combinations(others, size):
                if d_separated(parents, children, variables[a], variables[b],
                               tuple(variables[p] for p in subset)):
                    found.append(set(subset))
        if found:
            separating[(a, b)] = found
        else:
            adjacent[a, b] = adjacent[b, a] = True
    colliders = set()
    for (a, b), sets in separating.items():
        for c in np.flatnonzero(adjacent[a] & adjacent[b]).tolist():
            inside = [c in s for s in sets]
            if any(inside) and not all(inside):  # impossible in an ancestral graph
                raise HeuresisError("inconsistent separating sets: the middle node of an "
                                    "unshielded triple is in some but not all of them")
            if not any(inside):
                colliders.add((a, c, b))
    return GraphTarget(variables, adjacent, frozenset(colliders))


def answer_colliders(marks: np.ndarray) -> frozenset[tuple[int, int, int]]:
    """The unshielded colliders an answer states: a *-> c <-* b with a, b not adjacent."""
    skeleton = marks != 0
    found = set()
    for c in range(marks.shape[0]):
        into = [a for a in np.flatnonzero(skeleton[:, c]).tolist()
                if marks[a, c] == EdgeMark.ARROW]
        for a, b in itertools.combinations(into, 2):
            if not skeleton[a, b]:
                found.add((min(a, b), c, max(a, b)))
    return frozenset(found)


def graph_scores(target: GraphTarget, marks: np.ndarray) -> dict[str, float]:
    """Scores of an answer (a mark matrix over the target's variables) against the target.

    Adjacency precision, recall and F1 (as :func:`heuresis_env.metrics.adjacency_scores`),
    ``skeleton_exact`` and ``exact``: same adjacencies and same unshielded colliders (for
    the whole graph: the answer is in the true Markov equivalence class, read from its
    skeleton and arrowheads; other directions are not scored).
    """
    marks = np.asarray(marks, dtype=np.int8)
    k = len(target.variables)
    if marks.shape != (k, k):
        raise HeuresisError(f"an answer over {k} variables needs a {k} x {k} mark matrix")
    names = [f"v{p}" for p in range(k)]
    truth = Graph(names, np.where(target.adjacent, int(EdgeMark.TAIL), 0))
    answer = Graph(names, np.where(marks != 0, int(EdgeMark.TAIL), 0))
    adjacency = adjacency_scores(answer, truth)
    skeleton_exact = bool(np.array_equal(marks != 0, target.adjacent))
    exact = skeleton_exact and answer_colliders(marks) == target.colliders
    return {"f1": adjacency["f1"], "precision": adjacency["precision"],
            "recall": adjacency["recall"], "skeleton_exact": float(skeleton_exact),
            "exact": float(exact)}


# ---- effect level ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class EffectTruth:
    """A Monte Carlo average effect with its standard error and the rows it used."""

    value: float
    standard_error: float
    rows: int
    converged: bool

    def to_dict(self) -> dict:
        return {"value": self.value, "standard_error": self.standard_error, "rows": self.rows,
                "converged": self.converged}


def average_effect(scm: SCM, treatment: str, outcome: str, low: float, high: float,
                   seed: np.random.SeedSequence, relative_se: float = EFFECT_RELATIVE_SE,
                   batch_rows: int = EFFECT_BATCH_ROWS, max_rows: int = EFFECT_MAX_ROWS
                   ) -> EffectTruth:
    """E[outcome | do(treatment = high)] − E[outcome | do(treatment = low)] by Monte Carlo.

    Values are in the data's standardized units (as :meth:`SCM.sample`). Each batch samples
    both interventions from generators in the same state, so every row shares its exogenous
    noise across the two (the paired differences have a far smaller variance than two
    independent samples). Batches are added until the standard error of the mean difference
    is at most ``relative_se`` · |estimate|, or until ``max_rows`` is reached or the rows the
    current spread needs exceed twice that (then ``converged`` is False).
    Only the outcome's ancestors are simulated. Deterministic given ``seed``.
    """
    if treatment == outcome:
        raise HeuresisError("the treatment and the outcome must differ")
    sub = scm.ancestral_subset([outcome])
    if treatment not in sub.names:  # no directed path: the effect is exactly zero
        return EffectTruth(0.0, 0.0, 0, True)
    column = sub.index(outcome)
    differences: list[np.ndarray] = []
    rows = 0
    batch = 0
    while True:
        state = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, batch))
        at_low = sub.sample(batch_rows, np.random.Generator(np.random.PCG64(state)),
                            {treatment: low})[:, column]
        at_high = sub.sample(batch_rows, np.random.Generator(np.random.PCG64(state)),
                             {treatment: high})[:, column]
        differences.append(at_high - at_low)
        rows += batch_rows
        batch += 1
        pooled = np.concatenate(differences)
        value = float(pooled.mean())
        standard_error = float(pooled.std(ddof=1) / math.sqrt(pooled.size))
        if standard_error <= relative_se * abs(value):
            return EffectTruth(value, standard_error, rows, True)
        spread = standard_error * math.sqrt(rows)
        needed = (spread / (relative_se * abs(value))) ** 2 if value else math.inf
        if rows + batch_rows > max_rows or needed > 2 * max_rows:  # hopeless: stop early
            return EffectTruth(value, standard_error, rows, False)
