"""The large-n kernel tests: kci-block (exact KCI on row blocks) and kci-auto (exact KCI up to
a threshold, the approximation above it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from heuresis_env.cache import cache_root
from heuresis_env.discovery.citests import CI_TESTS, make_ci_test
from heuresis_env.discovery.citests.base import CITest
from heuresis_env.discovery.citests.kci import KCI, gamma_p_value
from heuresis_env.discovery.citests.large_n import AUTO_THRESHOLD, LARGE_N_TEST
from heuresis_env.discovery.pc import pc
from heuresis_env.errors import HeuresisError, UnknownNameError

ALPHA = 0.05


def chain(n: int, seed: int) -> np.ndarray:
    """X → Z → Y with nonlinear mechanisms, plus an independent W: columns X, Y, Z, W."""
    random = np.random.default_rng(seed)
    z = random.normal(size=n)
    x = np.sin(z) + 0.4 * random.laplace(size=n)
    z = np.tanh(x) + 0.5 * random.normal(size=n)  # x → z
    y = z**2 / 2 + 0.4 * random.uniform(-1, 1, size=n)  # z → y
    w = random.standard_t(5, size=n)
    return np.column_stack([x, y, z, w])


def null_data(n: int, random: np.random.Generator) -> np.ndarray:
    """X ⫫ Y | Z by construction (nonlinear, non-Gaussian noise): columns X, Y, Z."""
    z = random.normal(size=n)
    x = np.sin(z) + 0.5 * random.laplace(size=n)
    y = np.abs(z) + 0.5 * random.uniform(-1.5, 1.5, size=n)
    return np.column_stack([x, y, z])


# ---- agreement with exact KCI ---------------------------------------------------------------

#: (x, y, S) on chain(): dependent, dependent, independent given Z, independent (W)
KNOWN = [((0, 2, ()), False), ((1, 2, (0,)), False), ((0, 1, (2,)), True), ((0, 3, ()), True),
         ((1, 3, (2,)), True)]


@pytest.mark.parametrize("name, params", [
    ("kci", {}),
    ("kci-block", {"block_size": 200}),
    ("kci-auto", {"threshold": 100}),  # the approximation runs
])
def test_decisions_on_a_known_chain_agree_with_the_truth_and_exact_kci(name, params):
    data = chain(600, seed=1)
    exact = make_ci_test("kci", data, disk_cache=False)
    tester = make_ci_test(name, data, disk_cache=False, **params)
    for key, independent in KNOWN:
        assert exact.test(*key).independent(ALPHA) is independent, key
        if name == "kci-auto" and key == (0, 1, (2,)):
            # a true conditional independence: RCoT rejects it on this dataset whatever its
            # seed (p ≈ 0.01–0.04 for seeds 0–5; 4 of 40 such datasets at seed 0), so this
            # one decision is left to the calibration tests below
            continue
        assert tester.test(*key).independent(ALPHA) is independent, (name, key)


def test_one_block_is_exact_kci_up_to_row_order():
    data = chain(300, seed=2)
    exact = KCI(data, disk_cache=False)
    block = make_ci_test("kci-block", data, disk_cache=False, block_size=300)
    assert len(block.blocks) == 1
    for key, _ in KNOWN:
        assert block.test(*key).p_value == pytest.approx(exact.test(*key).p_value,
                                                         rel=1e-6, abs=1e-12)


def test_blocks_sum_their_moments():
    data = chain(500, seed=3)
    block = make_ci_test("kci-block", data, disk_cache=False, block_size=200, seed=4)
    assert [len(rows) for rows in block.blocks] == [167, 167, 166]
    assert sorted(np.concatenate(block.blocks).tolist()) == list(range(500))
    for x, y, s in [(0, 1, ()), (0, 1, (2,)), (1, 3, (0, 2))]:
        moments = np.array([KCI(data[rows], disk_cache=False).moments(x, y, s)
                            for rows in block.blocks]).sum(axis=0)
        assert block.test(x, y, s).p_value == pytest.approx(gamma_p_value(*moments), rel=1e-9)
        assert block.test(x, y, s).method == "kci-block"


# ---- kci-auto ------------------------------------------------------------------------------

def test_kci_auto_is_exact_kci_up_to_the_threshold_and_the_approximation_above():
    data = chain(300, seed=5)
    exact = make_ci_test("kci", data, disk_cache=False)
    below = make_ci_test("kci-auto", data, disk_cache=False)  # default threshold: 2,000 ≥ 300
    at = make_ci_test("kci-auto", data, disk_cache=False, threshold=300)
    above = make_ci_test("kci-auto", data, disk_cache=False, threshold=299, seed=7)
    approximation = make_ci_test(LARGE_N_TEST, data, disk_cache=False, seed=7)
    assert AUTO_THRESHOLD >= 300
    assert (below.method, at.method, above.method) == ("kci", "kci", LARGE_N_TEST)
    assert isinstance(below.delegate, KCI)
    for key, _ in KNOWN:
        for auto in (below, at):
            assert auto.test(*key) == exact.test(*key)  # bit-identical, method "kci"
        assert above.test(*key) == approximation.test(*key)
        assert above.test(*key).method == LARGE_N_TEST
    assert below.n_computed == len(KNOWN) and below.n_cached == len(KNOWN)
    assert [r[:3] for r in below.results()] == [r[:3] for r in exact.results()]


def test_kci_auto_shares_exact_kcis_disk_cache():
    data = chain(200, seed=6)
    make_ci_test("kci", data).test(0, 1, (2,))
    auto = make_ci_test("kci-auto", data)
    result = auto.test(0, 1, (2,))
    assert auto.n_computed == 0  # read from the entry "kci" wrote
    files = sorted(p.name for p in (Path(cache_root()) / "ci" / auto.delegate.data_hash).iterdir())
    assert len(files) == 1 and files[0].startswith("kci-")
    assert result == make_ci_test("kci", data, disk_cache=False).test(0, 1, (2,))


def test_pc_with_kci_auto_records_the_test_that_ran():
    data = chain(300, seed=8)
    exact = pc(data, ci_test="kci", ci_params={"disk_cache": False})
    auto = pc(data, ci_test="kci-auto", ci_params={"disk_cache": False})
    assert auto.ci_test == "kci"
    assert auto.to_dict() | {"runtime": 0} == exact.to_dict() | {"runtime": 0}
    approx = pc(data, ci_test="kci-auto", ci_params={"disk_cache": False, "threshold": 100})
    assert approx.ci_test == LARGE_N_TEST
    assert {d.test for d in approx.deletion_log} == {LARGE_N_TEST}


def test_the_pc_kci_algorithm_runs_kci_auto():
    from heuresis_env.discovery.algorithms import run_algorithm

    data = chain(200, seed=9)
    result = run_algorithm("pc-kci", data, ("X", "Y", "Z", "W"))
    assert result.extras["ci_test"] == "kci"
    reference = pc(data, names=("X", "Y", "Z", "W"), ci_test="kci")
    assert result.graph == reference.graph
    assert result.extras["deletion_log"] == [d.to_dict() for d in reference.deletion_log]


def test_bad_parameters_are_named():
    data = chain(300, seed=10)
    with pytest.raises(HeuresisError, match=r"\['est_width'\] do not apply at n = 300"):
        make_ci_test("kci-auto", data, threshold=100, est_width="median")
    make_ci_test("kci-auto", data, threshold=100, memory_mb=64)  # harmless above too
    assert make_ci_test("kci-auto", data, est_width="median").test(0, 1) == \
        make_ci_test("kci", data, est_width="median").test(0, 1)
    with pytest.raises(HeuresisError, match="threshold must be an integer ≥ 1"):
        make_ci_test("kci-auto", data, threshold=0)
    with pytest.raises(HeuresisError, match="seed must be an integer ≥ 0"):
        make_ci_test("kci-auto", data, seed=-1)
    with pytest.raises(UnknownNameError, match="block"):
        make_ci_test("kci-auto", data, block=3)
    with pytest.raises(HeuresisError, match="block_size must be an integer ≥ 50"):
        make_ci_test("kci-block", data, block_size=10)
    with pytest.raises(HeuresisError, match="not supported"):
        make_ci_test("kci-block", data, approx=False)


# ---- determinism -------------------------------------------------------------------------

@pytest.mark.parametrize("name, params", [("kci-auto", {"threshold": 100}),
                                          ("kci-block", {"block_size": 120})])
def test_same_seed_same_p_value_whatever_the_call_order(name, params):
    data = chain(400, seed=11)
    keys = [(0, 1, (2,)), (1, 3, ()), (0, 3, (1, 2)), (2, 3, (0,))]
    first = make_ci_test(name, data, disk_cache=False, seed=3, **params)
    second = make_ci_test(name, data, disk_cache=False, seed=3, **params)
    forward = [first.test(*key).p_value for key in keys]
    backward = [second.test(*key).p_value for key in reversed(keys)][::-1]
    assert forward == backward
    assert second.test(3, 1) == second.test(1, 3, [])
    other = make_ci_test(name, data, disk_cache=False, seed=4, **params)
    assert [other.test(*key).p_value for key in keys] != forward


# ---- calibration -------------------------------------------------------------------------

def rejection_rate(build, replicates: int = 100, n: int = 300) -> float:
    """Share of null datasets (X ⫫ Y | Z) on which the test rejects at α = 0.05."""
    rejections = 0
    for replicate in range(replicates):
        data = null_data(n, np.random.default_rng([12, replicate]))
        rejections += build(data).test(0, 1, (2,)).p_value <= ALPHA
    return rejections / replicates


class _RejectsEverything(CITest):
    name: ClassVar[str] = "broken-test"

    def _compute(self, x, y, s):
        return 1.0, 0.0


def test_the_calibration_bound_fails_a_broken_test():
    assert rejection_rate(lambda data: _RejectsEverything(data), replicates=20) >= 0.15


@pytest.mark.parametrize("name, params", [("kci-auto", {"threshold": 100}),
                                          ("kci-block", {"block_size": 100})])
def test_type_one_rate_under_the_null_is_near_alpha(name, params):
    rate = rejection_rate(lambda data: make_ci_test(name, data, disk_cache=False, **params))
    assert rate < 0.15, f"{name} rejected {rate:.0%} of 100 true nulls at alpha = 0.05"


# ---- the toolbox -------------------------------------------------------------------------

def test_the_ci_test_tool_offers_the_new_tests_from_the_registry():
    from heuresis_env.data import data_sha256
    from heuresis_env.env.toolbox.registry import parse_action, tool_schemas
    from heuresis_env.env.toolbox.state import EpisodeState, agent_ci_tests

    assert {"kci-auto", "kci-block"} <= set(agent_ci_tests()) <= set(CI_TESTS)
    schema = next(s for s in tool_schemas() if s["function"]["name"] == "ci_test")
    description = schema["function"]["parameters"]["properties"]["method"]["description"]
    assert all(name in description for name in agent_ci_tests())
    data = chain(300, seed=13)
    state = EpisodeState(data, ["X", "Y", "Z", "W"], data_sha256(data))
    parsed = parse_action({"tool": "ci_test", "args": {"x": "X", "y": "Y", "given": ["Z"],
                                                       "method": "kci-auto"}}, "full", False)
    result = parsed.tool.run(state, parsed.args)
    assert result.error is None
    assert "by kci-auto (ran kci)" in result.text and result.data["ran"] == "kci"
    assert result.data["p_value"] == make_ci_test("kci", data).test(0, 1, (2,)).p_value
    tester = state.ci_test("kci-auto")
    assert tester.params["seed"] == state.ci_test("rcot").params["seed"]  # seeded per instance
    json.dumps(result.data)
