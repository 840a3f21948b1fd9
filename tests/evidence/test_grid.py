"""The evidence grid: each column on data with a known graph, agreement with the components it
reads (PC, the reference algorithms, Fisher-z), the round trip through the tool, the cache."""

from __future__ import annotations

import itertools
import math

import gymnasium as gym
import numpy as np
import pytest

from heuresis_env.data import data_sha256
from heuresis_env.discovery import cached_run_algorithm, make_ci_test, pc
from heuresis_env.evidence import (
    GRID_NODE_FEATURE_NAMES,
    GRID_PAIR_FEATURES,
    EvidenceGrid,
    clear_memory,
    compute_evidence_grid,
    evidence_grid,
    guided_start,
)
from heuresis_env.generation import InstanceKey, generate_instance
from heuresis_env.registration import register_envs
from heuresis_env.seeding import int31_seed

register_envs()
NAMES = ("X", "Y", "Z", "W", "Q")


@pytest.fixture(scope="module")
def known():
    """X → Y → Z linear, W independent, Q = X² + noise (no linear correlation with X)."""
    rng = np.random.default_rng(0)
    n = 400
    x = rng.normal(size=n)
    y = 0.8 * x + 0.6 * rng.normal(size=n)
    z = 0.8 * y + 0.6 * rng.normal(size=n)
    w = rng.normal(size=n)
    q = x ** 2 - 1 + 0.5 * rng.normal(size=n)
    data = np.column_stack([x, y, z, w, q])
    data = (data - data.mean(axis=0)) / data.std(axis=0)
    sha = data_sha256(data)
    return data, sha, evidence_grid(data, NAMES, sha)


def _at(grid: EvidenceGrid, name: str, a: str, b: str) -> float:
    return float(grid.pair(name)[NAMES.index(a), NAMES.index(b)])


def test_each_column_on_a_known_graph(known):
    _, _, grid = known
    assert grid.pairs.shape == (5, 5, len(GRID_PAIR_FEATURES))
    assert grid.nodes.shape == (5, len(GRID_NODE_FEATURE_NAMES))
    # the chain: X and Z are dependent, but independent given Y
    assert _at(grid, "abs_r", "X", "Z") > 0.4
    assert _at(grid, "abs_partial_r", "X", "Z") < 0.12 < _at(grid, "abs_partial_r", "X", "Y")
    assert _at(grid, "fz_logp_empty", "X", "Z") > 10
    assert _at(grid, "fz_logp_max1", "X", "Z") < -math.log10(0.05)
    assert _at(grid, "fz_logp_max2", "Y", "Z") > 10
    for a, b in (("X", "Y"), ("Y", "Z")):
        assert _at(grid, "pc_fz_kept", a, b) == 1 and _at(grid, "pc_kci_kept", a, b) == 1
        assert _at(grid, "pc_kci_level", a, b) == 0 and _at(grid, "pc_kci_logp", a, b) == 0
    assert _at(grid, "pc_kci_kept", "X", "Z") == 0 and _at(grid, "pc_kci_level", "X", "Z") == 1
    assert _at(grid, "pc_kci_kept", "X", "W") == 0 and _at(grid, "pc_kci_level", "X", "W") == 0
    # Y tells about Z beyond every other column; X does not
    assert _at(grid, "gain_all", "Y", "Z") > 0.2 and abs(_at(grid, "gain_all", "X", "Z")) < 0.02
    assert _at(grid, "gain_sepset", "X", "Z") == pytest.approx(
        _at(grid, "gain_sepset", "X", "Z"))  # defined (X — Z was deleted at {Y})
    # Q = X² is invisible to correlations and Fisher-z, not to KCI and the regressions
    assert _at(grid, "abs_r", "X", "Q") < 0.15
    assert _at(grid, "kci_logp_empty", "X", "Q") > 5
    assert _at(grid, "gain_alone", "X", "Q") > 0.2
    assert _at(grid, "pc_kci_kept", "X", "Q") == 1
    # per node: W is not predictable from the rest; Z linearly is
    node = {f: grid.node(f) for f in GRID_NODE_FEATURE_NAMES}
    assert node["r2_linear"][NAMES.index("W")] < 0.05 < 0.5 < node["r2_linear"][NAMES.index("Z")]
    assert node["r2_nonlinear"][NAMES.index("Q")] > 0.5 > node["r2_linear"][NAMES.index("Q")]
    assert node["pc_kci_degree"][NAMES.index("Y")] == pytest.approx(2 / 4)


def test_symmetry_and_diagonal(known):
    _, _, grid = known
    for c, feature in enumerate(GRID_PAIR_FEATURES):
        matrix = grid.pairs[:, :, c]
        assert np.all(np.diag(matrix) == 0), feature.name
        if feature.symmetric:
            assert np.array_equal(matrix, matrix.T), feature.name
    assert np.all(np.isfinite(grid.pairs)) and np.all(np.isfinite(grid.nodes))


def test_columns_equal_the_components_they_read():
    instance = generate_instance(InstanceKey("wild", "dev", 1, d=6, n=300))
    data, names, sha = instance.X, instance.names, instance.sha256
    grid = evidence_grid(data, names, sha)
    start = guided_start(data, names, sha)
    assert np.array_equal(grid.pair("pc_kci_kept"), start.graph.skeleton())
    # the arrow column has the arrowhead at the row's variable: [i, j] is j → i
    assert np.array_equal(grid.pair("pc_kci_arrow") > 0.5, start.graph.directed_adjacency().T)
    assert np.array_equal(grid.pair("pc_fz_kept"), pc(data, names, "fisherz").skeleton.skeleton())
    for algorithm in ("boss", "grasp", "ges"):
        result = cached_run_algorithm(algorithm, data, names, sha, {}, None, int31_seed(sha))
        assert np.array_equal(grid.pair(f"{algorithm}_adj"), result.full_graph(names).skeleton())
    fisherz = make_ci_test("fisherz", data)
    for i, j in itertools.combinations(range(6), 2):
        others = [k for k in range(6) if k not in (i, j)]
        largest = max(fisherz.p_value(i, j, s) for size in range(3)
                      for s in itertools.combinations(others, size))
        assert grid.pair("fz_logp_max2")[i, j] == pytest.approx(
            min(-math.log10(max(largest, 1e-30)), 30.0), rel=1e-5)
    for deletion in start.deletion_log:
        i, j = names.index(deletion.x), names.index(deletion.y)
        assert grid.pair("pc_kci_level")[i, j] == deletion.level
        assert grid.pair("pc_kci_logp")[i, j] == pytest.approx(-math.log10(deletion.p_value),
                                                               rel=1e-5)


def test_rows_round_trip_bit_for_bit_and_the_tool_serves_the_grid():
    env = gym.make("Heuresis-anm-v0", d=6, n=200)
    env.reset(seed=0, options={"index": 2})
    _, _, _, _, info = env.step({"tool": "evidence_grid", "args": {}})
    assert info["error"] is None
    served = EvidenceGrid.from_rows(info["data"]["rows"], info["data"]["nodes"])
    instance = generate_instance(InstanceKey("anm", "dev", 2, d=6, n=200))  # the default split
    grid = evidence_grid(instance.X, instance.names, instance.sha256)
    assert served.names == grid.names
    assert served.pairs.tobytes() == grid.pairs.tobytes()
    assert served.nodes.tobytes() == grid.nodes.tobytes()
    with pytest.raises(Exception, match="cover 14 of the 15 pairs"):
        EvidenceGrid.from_rows(info["data"]["rows"][1:], info["data"]["nodes"])
    env.close()


def test_cached_once_and_recomputed_equal(known):
    data, sha, grid = known
    clear_memory()
    again = evidence_grid(data, NAMES, sha)  # from disk
    fresh = compute_evidence_grid(data, NAMES, sha)
    assert again.pairs.tobytes() == grid.pairs.tobytes() == fresh.pairs.tobytes()
    assert set(fresh.seconds) == {"correlations", "fisherz_screen", "pc_fisherz",
                                  "pc_kci_read", "algorithms", "regressions"}
