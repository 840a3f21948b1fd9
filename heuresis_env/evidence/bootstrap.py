"""Bootstrap edge frequencies: how often an algorithm finds each edge over resampled rows."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.graphs import Graph


def bootstrap_edge_frequencies(data: np.ndarray, n_boot: int, frac: float,
                               rng: np.random.Generator,
                               run: Callable[[np.ndarray], Graph | None]
                               ) -> tuple[np.ndarray, np.ndarray, int]:
    """How often each pair is adjacent, and each edge directed, over bootstrap resamples.

    Each resample draws ``round(frac · n)`` rows with replacement; ``run`` maps a data matrix
    to a graph over the same columns, or None when the algorithm failed on that resample
    (failed resamples are left out). Returns (adjacency frequencies, symmetric d × d;
    directed frequencies, ``[i, j]`` for i → j; number of successful resamples).
    """
    data = np.asarray(data, dtype=np.float64)
    n, d = data.shape
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 1:
        raise HeuresisError(f"n_boot must be a positive integer, got {n_boot!r}")
    if not 0 < frac <= 1:
        raise HeuresisError(f"frac must be in (0, 1], got {frac!r}")
    rows = max(10, int(round(frac * n)))
    adjacent = np.zeros((d, d), dtype=np.int64)
    directed = np.zeros((d, d), dtype=np.int64)
    successes = 0
    for _ in range(int(n_boot)):
        graph = run(data[rng.integers(0, n, size=rows)])
        if graph is None:
            continue
        successes += 1
        adjacent += graph.skeleton()
        directed += graph.directed_adjacency()
    scale = float(max(successes, 1))
    return adjacent / scale, directed / scale, successes
