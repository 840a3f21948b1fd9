"""Issue 46, route 3: one salt path. On main, ``gym.make("Heuresis-lg-v0", split="test",
salt="abc")`` reset happily: the environment, the question sets, the reports and the amortized
dataset took the salt through an unchecked path (``resolve_salt``). Every entry point now
takes it through the one checked value and refuses a weak salt with the same message."""

from __future__ import annotations

import gymnasium as gym
import pytest

import heuresis_env  # noqa: F401  (registers the environments)
from heuresis_env.errors import HeuresisError
from heuresis_env.generation import InstanceKey, cached_instance
from heuresis_env.generation.salts import TEST_SALT_ENV
from heuresis_env.questions import question_set
from heuresis_env.registration import env_id

SMALL = {"d": 4, "n": 100}


def test_a_weak_salt_given_to_the_environment_is_refused():
    with pytest.raises(HeuresisError, match="too weak to seal the test split"):
        gym.make(env_id("lg"), split="test", salt="abc", **SMALL)
    with pytest.raises(HeuresisError, match="too weak to seal the test split"):
        gym.make(env_id("lg", "qa"), split="test", salt="abc", **SMALL)


def test_a_weak_salt_in_the_variable_is_refused_by_every_reader(monkeypatch, tmp_path):
    monkeypatch.setenv(TEST_SALT_ENV, "abc")
    with pytest.raises(HeuresisError, match="too weak to seal the test split"):
        gym.make(env_id("lg"), split="test", **SMALL).reset(seed=0)
    with pytest.raises(HeuresisError, match="too weak to seal the test split"):
        question_set("lg", "test", **SMALL)
    with pytest.raises(HeuresisError, match="too weak to seal the test split"):
        cached_instance(InstanceKey("lg", "test", 0, **SMALL))
    from heuresis_env.evaluation.run_format import RunDirectory, run_salt

    sealed_run = RunDirectory(tmp_path, {"salt_digest": "scrypt$32768$8$1$00"}, [])
    with pytest.raises(HeuresisError, match="too weak to seal the test split"):
        run_salt(sealed_run)  # what report, resume, the viewer and import-inspect read


def test_the_amortized_dataset_refuses_a_weak_salt(monkeypatch, tmp_path):
    pytest.importorskip("torch")
    from agents.amortized import build_shards

    monkeypatch.setenv(TEST_SALT_ENV, "abc")
    with pytest.raises(HeuresisError, match="too weak to seal the test split"):
        build_shards(["lg"], "test", range(1), tmp_path, **SMALL)
    assert not list(tmp_path.glob("*.npz"))
