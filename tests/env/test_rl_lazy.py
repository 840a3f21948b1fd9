"""The RL view's lazy evidence: the same numbers as the eager view once a pair is tested, a
reset that computes none of the deferred columns, and caches reused across resets."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import heuresis_env.evidence.pairs as pairs_module
import heuresis_env.evidence.repair as repair_module
import heuresis_env.evidence.start as start_module
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import (
    CHEAP_FEATURES,
    DEFERRED_FEATURES,
    FEATURE_NAMES,
    REPAIR_FEATURE_NAMES,
    EvidenceProvider,
    clear_memory,
    compute_pair_evidence,
)
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.registration import env_id, register_envs

register_envs()
SMALL = {"d": 6, "n": 200, "indices": [0]}
CHEAP = [FEATURE_NAMES.index(name) for name in CHEAP_FEATURES]
DEFERRED = [FEATURE_NAMES.index(name) for name in DEFERRED_FEATURES]


def make(mode: str, family: str = "wild", **kwargs) -> gym.Env:
    return gym.make(env_id(family), interface="rl", rl_evidence=mode, **{**SMALL, **kwargs})


def instance(family: str = "wild", d: int = 6):
    return generate_instance(InstanceKey(family, "dev", 0, d=d, n=200))


def refuse(*args, **kwargs):
    raise AssertionError("this computation should not run")


def test_default_mode_is_lazy_unguided_and_eager_guided():
    assert gym.make(env_id("lg"), interface="rl").unwrapped._rl.evidence_mode == "lazy"
    guided = gym.make(env_id("lg"), interface="rl", guided=True)
    assert guided.unwrapped._rl.evidence_mode == "eager"
    with pytest.raises(HeuresisError, match="RL evidence mode.*'lazzy'"):
        gym.make(env_id("lg"), interface="rl", rl_evidence="lazzy")


@pytest.mark.parametrize("guided", [False, True])
def test_lazy_observations_equal_eager_ones_field_by_field(guided):
    """Same actions on both views: every key equal except a pair's deferred columns (and its
    repair row), which the lazy view shows from the step that tests the pair on — equal to
    the eager view's from then on; once every pair is tested the observations are equal."""
    budget = {"max_steps": 200, "guided": guided, "target": "dag"}
    eager, lazy = make("eager", **budget), make("lazy", **budget)
    observation_e, _ = eager.reset(seed=0)
    observation_l, _ = lazy.reset(seed=0)
    n_pairs = lazy.unwrapped._rl.n_pairs
    width = len(REPAIR_FEATURE_NAMES)
    tested = np.zeros(n_pairs, dtype=bool)
    table = lazy.unwrapped.rl_actions
    test_rows = {a.index: k for k, a in enumerate(a for a in table if a.operation == "test")}
    rng = np.random.default_rng(5)

    def compare(observation_e, observation_l):
        views_e = eager.unwrapped.unflatten_observation(observation_e)
        views_l = lazy.unwrapped.unflatten_observation(observation_l)
        for key in ("adjacency", "budget_left"):
            assert np.array_equal(views_e[key], views_l[key]), key
        for key in ("evidence", "evidence_available"):
            assert np.array_equal(views_e[key][:, CHEAP], views_l[key][:, CHEAP]), key
            assert np.array_equal(views_e[key][tested], views_l[key][tested]), key
            assert not views_l[key][~tested][:, DEFERRED].any(), key
        for key in ("repair", "repair_available"):
            if not guided:
                assert not views_e[key].any() and not views_l[key].any()
                continue
            assert np.array_equal(views_e[key][tested], views_l[key][tested]), key
            assert not views_l[key][~tested].any(), key
        assert np.array_equal(eager.unwrapped.action_masks(), lazy.unwrapped.action_masks())

    compare(observation_e, observation_l)
    assert lazy.unwrapped.action_masks()[list(test_rows)].all()
    for _ in range(30):  # a random masked mix of edits and tests
        mask = lazy.unwrapped.action_masks()
        mask[-1] = False
        action = int(rng.choice(np.flatnonzero(mask)))
        if action in test_rows:
            tested[test_rows[action]] = True
        observation_e, reward_e, *_ = eager.step(action)
        observation_l, reward_l, *_ = lazy.step(action)
        assert reward_e == reward_l
        compare(observation_e, observation_l)
    for action, row in test_rows.items():  # then every pair not tested yet
        if not tested[row]:
            tested[row] = True
            observation_e, *_ = eager.step(action)
            observation_l, *_ = lazy.step(action)
            compare(observation_e, observation_l)
    for key in observation_e:
        assert np.array_equal(observation_e[key], observation_l[key]), key
    if guided:
        assert np.asarray(observation_l["repair_available"]).reshape(-1, width).any()


def test_lazy_reset_computes_none_of_the_deferred_columns(monkeypatch):
    data = instance("anm")
    clear_memory()
    for module, name in ((pairs_module, "compute_pair_evidence"),
                         (pairs_module, "bootstrap_edge_frequencies"),
                         (pairs_module, "distance_correlations"),
                         (start_module, "compute_guided_start"),
                         (repair_module, "compute_repair_evidence")):
        monkeypatch.setattr(module, name, refuse)
    env = make("lazy", "anm")
    observation, _ = env.reset(seed=0)
    table = EvidenceProvider(data.X, data.names, data.sha256).pair_table()
    assert table is env.unwrapped._rl._table
    assert table.n_computed == 0 and table.counts == {"rows": 0, "stability": 0}
    assert table._kci is None  # no KCI test object, so no KCI test
    views = env.unwrapped.unflatten_observation(observation)
    assert not views["evidence_available"][:, DEFERRED].any()
    assert views["evidence_available"][:, FEATURE_NAMES.index("abs_pearson_r")].all()
    # the first test computes that pair only (and the stability table, once)
    monkeypatch.undo()
    test = next(a for a in env.unwrapped.rl_actions if a.operation == "test")
    env.step(test.index)
    assert table.n_computed == 1 and table.counts == {"rows": 1, "stability": 1}
    assert table._kci.n_computed + table._kci.n_cached >= 1


def test_the_cache_is_reused_across_resets_and_processes(monkeypatch):
    data = instance("mixed")
    clear_memory()
    env = make("lazy", "mixed")
    first, _ = env.reset(seed=0)
    tests = [a.index for a in env.unwrapped.rl_actions if a.operation == "test"]
    after_test, *_ = env.step(tests[3])
    table = env.unwrapped._rl._table
    assert table.counts == {"rows": 1, "stability": 1}
    # a second reset of the same instance: the same table, nothing recomputed, and the same
    # first observation (a pair tested in an earlier episode is not shown before its test)
    again, _ = env.reset(seed=0)
    assert env.unwrapped._rl._table is table
    for key in first:
        assert np.array_equal(first[key], again[key]), key
    repeated, *_ = env.step(tests[3])
    assert table.counts == {"rows": 1, "stability": 1}
    assert np.array_equal(after_test["evidence"], repeated["evidence"])
    # another process (memory forgotten): the disk cache serves PC-Fisher-z, stability and
    # the KCI test; nothing is computed again
    clear_memory()
    monkeypatch.setattr(pairs_module, "pc", refuse)
    monkeypatch.setattr(pairs_module, "bootstrap_edge_frequencies", refuse)
    env.reset(seed=0)
    fresh = env.unwrapped._rl._table
    assert fresh is not table
    from_disk, *_ = env.step(tests[3])
    assert fresh._kci.n_computed == 0
    assert np.array_equal(after_test["evidence"], from_disk["evidence"])
    assert np.array_equal(after_test["evidence_available"], from_disk["evidence_available"])
    # and the whole table, once cached, is read rather than recomputed pair by pair
    whole = compute_pair_evidence(data.X, data.names, data.sha256)
    assert np.array_equal(whole.feature_matrix()[3], fresh.row(3), equal_nan=True)


def test_stability_above_the_size_limit_is_missing_in_both_modes(monkeypatch):
    monkeypatch.setattr(pairs_module, "STABILITY_MAX_D", 5)
    monkeypatch.setattr(pairs_module, "bootstrap_edge_frequencies", refuse)
    clear_memory()
    data = instance("hetero")
    column = FEATURE_NAMES.index("stability")
    whole = compute_pair_evidence(data.X, data.names, data.sha256)
    assert np.isnan(whole.stability).all()
    assert not np.isnan(whole.feature_matrix()[:, DEFERRED[:-1]]).all()
    env = make("lazy", "hetero")
    env.reset(seed=0)
    test = next(a for a in env.unwrapped.rl_actions if a.operation == "test")
    observation, *_ = env.step(test.index)
    views = env.unwrapped.unflatten_observation(observation)
    assert views["evidence_available"][0, FEATURE_NAMES.index("distance_correlation")] == 1
    assert views["evidence_available"][0, column] == 0


@pytest.mark.slow
def test_a_large_instance_resets_without_the_table():
    """d = 120 (7,140 pairs, 35,701 actions): the reset runs PC-Fisher-z only, a test computes
    one pair (stability is missing above STABILITY_MAX_D), and the observation stays flat."""
    env = gym.make(env_id("lg"), interface="rl", d=120, n=300, indices=[0], max_steps=20)
    observation, _ = env.reset(seed=0)
    rl = env.unwrapped._rl
    assert rl.n_pairs == 7140 and env.action_space.n == 5 * 7140 + 1
    assert observation["evidence"].shape == (7140 * len(FEATURE_NAMES),)
    assert rl._table.n_computed == 0
    test = next(a for a in env.unwrapped.rl_actions if a.operation == "test")
    observation, _, _, _, info = env.step(test.index)
    assert "error" not in info and rl._table.counts == {"rows": 1, "stability": 0}
    views = env.unwrapped.unflatten_observation(observation)
    assert views["evidence_available"][0, FEATURE_NAMES.index("kci_p_at_deleting_set")] == 1


@pytest.mark.parametrize("n, method", [(200, "kci"), (2400, "rcot")])
def test_the_kernel_column_runs_exact_kci_up_to_the_threshold_and_the_approximation_above(
        n, method, monkeypatch, tmp_path):
    """``kci_p_at_deleting_set`` is ``kci-auto``'s p-value: exact KCI's (its own cache entries)
    at n ≤ 2,000, the large-n approximation's above it, so a tested pair of a 10,000-row
    table does not cost an O(n³) test."""
    from heuresis_env.discovery.citests import make_ci_test
    from heuresis_env.evidence.pairs import PairTable

    monkeypatch.setenv("HEURESIS_CACHE_DIR", str(tmp_path))
    clear_memory()
    found = generate_instance(InstanceKey("wild", "dev", 0, d=4, n=n))
    table = PairTable(found.X, found.names, found.sha256, reuse=False)
    table.compute_rows([0, 5])
    assert table._kci.method == method
    column = FEATURE_NAMES.index("kci_p_at_deleting_set")
    reference = make_ci_test(method, np.asarray(found.X, dtype=np.float64))
    for row in (0, 5):
        i, j = table.pairs[row].tolist()
        expected = reference.test(i, j, table.conditioning_set(row)).p_value
        assert table.row(row)[column] == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("n, method", [(200, "kci"), (2400, "rcot")])
def test_the_guided_start_runs_the_pc_kci_algorithms_test(n, method, monkeypatch, tmp_path):
    """The guided start is PC with ``kci-auto``, as the ``pc-kci`` algorithm: exact KCI up to
    2,000 rows (the same graph and log as PC with ``kci``, under the cache key exact KCI's start
    always had, so earlier caches stay valid), the large-n approximation above (under a key of
    its own) — and the evidence grid, which reruns PC on the guided start's test, agrees with
    it on both sides of the threshold."""
    from heuresis_env.discovery import pc
    from heuresis_env.evidence.grid import compute_evidence_grid
    from heuresis_env.evidence.store import cached_evidence

    monkeypatch.setenv("HEURESIS_CACHE_DIR", str(tmp_path))
    clear_memory()
    found = generate_instance(InstanceKey("wild", "dev", 1, d=4, n=n))
    data = np.asarray(found.X, dtype=np.float64)
    start = start_module.guided_start(data, found.names, found.sha256)
    assert start.ci_test == method
    reference = pc(data, found.names, ci_test=method, alpha=start.alpha)
    assert start.graph == reference.graph
    assert [(e.x, e.y, e.conditioning_set, e.p_value) for e in start.deletion_log] == [
        (e.x, e.y, e.conditioning_set, e.p_value) for e in reference.deletion_log]
    exact_key = {"alpha": start.alpha, "ci_test": "kci"}
    clear_memory()
    if method == "kci":  # read back from disk under exact KCI's key
        assert cached_evidence(found.sha256, "guided_start", exact_key, refuse) == start
    else:  # an approximate start is never served as exact KCI's
        with pytest.raises(AssertionError, match="should not run"):
            cached_evidence(found.sha256, "guided_start", exact_key, refuse)
    compute_evidence_grid(data, found.names, found.sha256, guided=start)  # its PC rerun agrees


def test_an_instance_fisher_z_cannot_test_resets_and_plays(monkeypatch, tmp_path):
    """Andes under the ``lg`` mechanisms has a numerically singular correlation matrix, so
    PC-Fisher-z cannot run (a DataError): the RL view still resets and plays — the Fisher-z
    column shows no deletion, the table records why, the kernel column tests at ∅ — instead
    of raising out of ``reset`` (``check_env`` on the id did)."""
    monkeypatch.setenv("HEURESIS_CACHE_DIR", str(tmp_path))
    clear_memory()
    env = gym.make(env_id("bnlearn-andes"), interface="rl")
    singular = None
    for index in range(6):
        env.reset(options={"index": index})
        table = env.unwrapped._rl._table
        if table.fisherz_error is not None:
            singular = index
            break
    assert singular is not None, "no Andes dev instance of the first six is singular for Fisher-z"
    assert "singular" in table.fisherz_error
    column = FEATURE_NAMES.index("fisherz_deletion_p")
    assert np.isnan(table.cheap_matrix()[:, column]).all()
    test = next(a for a in env.unwrapped.rl_actions if a.operation == "test")
    observation, _, terminated, truncated, info = env.step(test.index)
    assert "error" not in info and not terminated and not truncated
    assert table.conditioning_set(0) == ()
