"""Graph models: random DAGs over a uniformly random causal order (Erdős–Rényi,
Barabási–Albert, bounded in-degree), the first layer of an SCM (:mod:`.scm`)."""

from __future__ import annotations

import math

import numpy as np

from heuresis_env.errors import HeuresisError, UnknownNameError

GRAPH_MODELS = ("er", "ba", "bounded")
#: the largest in-degree of the ``bounded`` graph model (hand-built networks rarely exceed it)
BOUNDED_MAX_PARENTS = 3


def sample_dag(d: int, rng: np.random.Generator, model: str = "er",
               expected_degree: float = 2.0) -> np.ndarray:
    """A random DAG as a boolean adjacency (``[i, j]`` for i → j) over a uniformly random order.

    - ``"er"`` (Erdős–Rényi): each pair is joined with p = min(1, expected_degree / (d − 1)),
      the edge pointing from the earlier to the later node of the causal order; the mean edge
      count is expected_degree · d / 2 (= d at the default degree 2), except that for d = 2
      p is capped at 1.
    - ``"ba"`` (Barabási–Albert): nodes arrive one by one and each joins
      m = max(1, round(expected_degree / 2)) distinct earlier arrivals, chosen with
      probability proportional to their degree (uniformly while all degrees are 0). The causal
      order is the *reverse* arrival order, so each newcomer is a cause of the nodes it joins
      and hubs are effects with many parents (v-structures), as in the scale-free graphs of
      NOTEARS. The edge count is m(d − 1) − m(m − 1)/2, i.e. d − 1 at degree 2.
    - ``"bounded"`` (bounded in-degree, like hand-built networks such as the BNLearn ones):
      the node at causal position k > 0 draws its number of parents from a binomial with
      min(k, :data:`BOUNDED_MAX_PARENTS`) trials and mean min(expected_degree / 2, trials),
      then that many parents uniformly among the k earlier nodes; no node has more than
      :data:`BOUNDED_MAX_PARENTS` parents, and the mean edge count is close to
      expected_degree · d / 2 when that bound does not bind.

    Node labels are a uniformly random permutation of the causal order.
    """
    if not isinstance(d, int | np.integer) or d < 2:
        raise HeuresisError(f"d must be an integer ≥ 2, got {d!r}")
    if not (math.isfinite(expected_degree) and expected_degree > 0):
        raise HeuresisError(f"expected_degree must be a positive number, got {expected_degree!r}")
    d = int(d)
    order = rng.permutation(d)  # order[k] is the node at causal position k
    position_adjacency: np.ndarray = np.zeros((d, d), dtype=bool)  # over causal positions, upper triangular
    if model == "er":
        p = min(1.0, expected_degree / (d - 1))
        draws = rng.random((d, d))
        position_adjacency = np.triu(draws < p, k=1)
    elif model == "ba":
        m = max(1, int(round(expected_degree / 2)))
        degree = np.zeros(d, dtype=np.int64)
        for arrival in range(1, d):
            targets: list[int] = []
            for _ in range(min(m, arrival)):
                weights = degree[:arrival].copy()
                weights[targets] = 0
                total = int(weights.sum())
                if total == 0:  # no degree yet (or all taken): uniform over the remaining
                    candidates = [i for i in range(arrival) if i not in targets]
                    chosen = candidates[int(rng.integers(len(candidates)))]
                else:
                    threshold = int(rng.integers(total))
                    chosen = int(np.searchsorted(np.cumsum(weights), threshold, side="right"))
                targets.append(chosen)
            for target in targets:
                degree[arrival] += 1
                degree[target] += 1
                # arrival index a ↦ causal position d−1−a: the newcomer is earlier, a cause
                position_adjacency[d - 1 - arrival, d - 1 - target] = True
    elif model == "bounded":
        for position in range(1, d):
            trials = min(position, BOUNDED_MAX_PARENTS)
            probability = min(1.0, expected_degree / 2 / trials)
            # a binomial count and a uniform subset from uniform draws and a permutation only
            # (no libm call, so the same seed gives the same graph on every machine)
            count = int(np.count_nonzero(rng.random(trials) < probability))
            parents = rng.permutation(position)[:count]
            position_adjacency[parents, position] = True
    else:
        raise UnknownNameError("graph model", model, GRAPH_MODELS)
    adjacency = np.zeros((d, d), dtype=bool)
    adjacency[np.ix_(order, order)] = position_adjacency
    return adjacency
