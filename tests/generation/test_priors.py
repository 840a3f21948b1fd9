"""Train priors: the train split's options as seeded draws; the bounded in-degree graph model."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from heuresis_env.errors import HeuresisError
from heuresis_env.generation import (
    BENCHMARK_FAMILIES,
    TRAIN_PRIORS,
    InstanceKey,
    TrainPrior,
    generate_instance,
    get_train_prior,
    sample_dag,
)
from heuresis_env.generation.graph_models import BOUNDED_MAX_PARENTS


def test_a_prior_draws_the_same_keys_everywhere_and_only_train_keys():
    prior = get_train_prior("wide")
    keys = [prior.key(i) for i in range(600)]
    assert keys == [get_train_prior("wide").key(i) for i in range(600)]
    assert {k.split for k in keys} == {"train"}
    assert [k.index for k in keys] == list(range(600))
    assert {k.family for k in keys} == set(BENCHMARK_FAMILIES)
    assert {k.graph_model for k in keys} == {"er", "ba", "bounded"}
    d = np.array([k.d for k in keys])
    n = np.array([k.n for k in keys])
    assert d.min() == 5 and d.max() >= 45 and 5 <= d.min() and d.max() <= 50
    assert n.min() >= 200 and n.max() <= 2000
    # log-uniform: about as many d in [5, 16) as in [16, 50]
    small = np.mean(d < 16)
    assert 0.4 < small < 0.6
    degrees = [k.expected_degree for k in keys]
    assert 1.0 <= min(degrees) and max(degrees) <= 4.0


def test_the_benchmark_prior_is_the_benchmark_size_and_hashes_as_before():
    key = get_train_prior("benchmark").key(3)
    assert (key.d, key.n, key.graph_model, key.degree) == (10, 600, "er", None)
    plain = InstanceKey(key.family, "train", 3)
    assert key == plain and key.to_dict() == plain.to_dict()  # no degree: the old hash


def test_a_default_degree_key_is_the_old_key_and_other_degrees_differ():
    old = InstanceKey("wild", "dev", 5)
    assert InstanceKey("wild", "dev", 5, degree=2.0) == old
    assert "degree" not in old.to_dict()
    denser = InstanceKey("wild", "dev", 5, degree=3.5)
    assert denser.to_dict()["degree"] == 3.5 and "deg3.5" in denser.slug
    assert InstanceKey.from_dict(denser.to_dict()) == denser
    a = generate_instance(denser).record.require_graph("t").n_edges()
    assert generate_instance(old).sha256 != generate_instance(denser).sha256
    assert a >= 0
    with pytest.raises(HeuresisError, match="degree"):
        InstanceKey("wild", "dev", 5, degree=0)
    with pytest.raises(HeuresisError, match="random graph model"):
        InstanceKey("bnlearn-asia", "dev", 5, degree=3.0)


def test_bounded_graphs_respect_their_bound_and_their_mean_degree():
    rng = np.random.default_rng(0)
    edges, worst = [], 0
    for _ in range(300):
        adjacency = sample_dag(30, rng, "bounded", expected_degree=2.5)
        edges.append(adjacency.sum())
        worst = max(worst, int(adjacency.sum(axis=0).max()))
        order = np.argsort(-adjacency.sum(axis=0))
        assert not np.any(np.diag(adjacency)) and order.size == 30
    assert worst <= BOUNDED_MAX_PARENTS
    # mean edges ≈ degree · d / 2 = 37.5, minus the first nodes' smaller choice
    assert 34 < np.mean(edges) < 38.5


def test_the_degree_moves_the_edge_count_as_documented():
    counts = collections.defaultdict(list)
    for model in ("er", "bounded"):
        for degree in (1.0, 4.0):
            for i in range(60):
                key = InstanceKey("lg", "train", i, d=20, n=50, graph_model=model, degree=degree)
                counts[(model, degree)].append(
                    generate_instance(key).record.require_graph("t").n_edges())
    for model in ("er", "bounded"):
        assert np.mean(counts[(model, 4.0)]) > 3 * np.mean(counts[(model, 1.0)])
    assert abs(np.mean(counts[("er", 4.0)]) - 40) < 4


def test_priors_refuse_what_they_cannot_draw():
    with pytest.raises(HeuresisError, match="fixed structure"):
        TrainPrior("x", families=("bnlearn-asia",))
    with pytest.raises(HeuresisError):
        TrainPrior("x", d=(1, 10))
    with pytest.raises(HeuresisError, match="train index"):
        TRAIN_PRIORS["wide"].key(-1)
    loo = get_train_prior("wide", families=("lg", "anm"))
    assert {loo.key(i).family for i in range(50)} == {"lg", "anm"}
    assert loo.digest != TRAIN_PRIORS["wide"].digest
