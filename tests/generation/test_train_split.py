"""The train split: an unbounded stream per family, disjoint from dev and every test salt."""

from __future__ import annotations

import subprocess
import sys

import pytest

from heuresis_env.errors import HeuresisError
from heuresis_env.generation import (
    SPLIT_SIZES,
    STREAM_SPLITS,
    InstanceKey,
    default_count,
    generate_instance,
    generate_split,
    load_split,
)
from heuresis_env.generation.instances import key_seed_sequence
from heuresis_env.generation.salts import new_salt, sealing_salt


def _entropy(key: InstanceKey, salt: str | None = None) -> tuple[int, ...]:
    return tuple(key_seed_sequence(key, salt).entropy)


def test_train_seeds_never_meet_dev_or_any_test_seed():
    train = {_entropy(InstanceKey("wild", "train", i)) for i in range(2000)}
    train |= {_entropy(InstanceKey("wild", "train", i)) for i in range(10**9, 10**9 + 100)}
    dev = {_entropy(InstanceKey("wild", "dev", i)) for i in range(SPLIT_SIZES["dev"])}
    test = {_entropy(InstanceKey("wild", "test", i)) for i in range(SPLIT_SIZES["test"])}
    salts = [new_salt() for _ in range(3)]
    sealed = {_entropy(InstanceKey("wild", "test", i), salt)
              for salt in salts for i in range(SPLIT_SIZES["test"])}
    assert len(train) == 2100 and len(sealed) == 3 * 32
    assert not train & dev and not train & test and not train & sealed
    # why it holds for every salt: a train seed is the 8 words of SHA-256 of its key (which
    # names the split); a sealed test seed has the salt's 8 words more, so it is longer
    assert {len(e) for e in train} == {8} and {len(e) for e in sealed} == {16}


def test_the_salt_never_reaches_the_train_split(monkeypatch):
    key = InstanceKey("mixed", "train", 7)
    plain = generate_instance(key)
    monkeypatch.setenv("HEURESIS_TEST_SALT", "0" * 31 + "1")
    assert sealing_salt("train") is None
    again = generate_instance(key)
    assert again.sha256 == plain.sha256 and not again.sealed
    assert generate_instance(key, salt="f" * 32).sha256 == plain.sha256


def test_train_instances_differ_from_dev_and_test_instances():
    train = {generate_instance(InstanceKey("lg", "train", i, n=100)).sha256 for i in range(60)}
    dev = {generate_instance(InstanceKey("lg", "dev", i, n=100)).sha256 for i in range(60)}
    test = {generate_instance(InstanceKey("lg", "test", i, n=100)).sha256 for i in range(32)}
    assert len(train) == 60 and not train & dev and not train & test


def test_the_stream_is_unbounded_but_a_count_is_needed():
    assert "train" in STREAM_SPLITS and SPLIT_SIZES["train"] >= 2**31
    far = InstanceKey("anm", "train", 2**31 - 1, n=60)
    assert generate_instance(far).key == far
    with pytest.raises(HeuresisError, match="index of the train split"):
        InstanceKey("anm", "train", 2**31)
    with pytest.raises(HeuresisError, match="unbounded stream"):
        default_count("anm", "train", None)
    assert default_count("anm", "dev", None) == 100
    assert [i.key.index for i in generate_split("anm", "train", 3, n=60)] == [0, 1, 2]


def test_heuresis_generate_writes_train_instances(tmp_path):
    command = [sys.executable, "-m", "heuresis_env.cli", "generate", "--family", "lg",
               "--split", "train", "--start", "5", "--count", "3", "--n", "80",
               "--out", str(tmp_path), "--no-progress"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    instances = load_split(tmp_path / "lg" / "train")
    assert [i.key.index for i in instances] == [5, 6, 7]
    assert all(i.key.split == "train" for i in instances)
    refused = subprocess.run(command[:8] + ["--out", str(tmp_path / "x"), "--no-progress"],
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "give --count" in refused.stderr
