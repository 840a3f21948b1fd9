"""The episode configuration and the run request: built once, checked once, passed down
unchanged; and the one checked salt every entry point takes (issue 43)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import gymnasium as gym
import pytest

import heuresis_env  # noqa: F401  (registers the environments)
from heuresis_env.env import EpisodeConfig, HeuresisEnv
from heuresis_env.env.config import KEYWORDS
from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import RUN_ARGUMENTS, RunRequest, evaluate
from heuresis_env.generation import InstanceKey, generate_instance
from heuresis_env.generation.salts import TEST_SALT_ENV, SealedSalt, new_salt, sealing_salt
from heuresis_env.questions import question_set
from heuresis_env.registration import env_id

SMALL = {"d": 4, "n": 100}


def test_the_environment_takes_few_named_parameters_and_every_keyword_builds_the_config():
    named = [p for p in inspect.signature(HeuresisEnv.__init__).parameters.values()
             if p.kind is not inspect.Parameter.VAR_KEYWORD]
    assert len(named) <= 6
    fields = {f.name for f in dataclasses.fields(EpisodeConfig)} - {"table"}
    assert fields - {"family"} <= set(KEYWORDS)


def test_keywords_and_a_config_make_the_same_environment():
    config = EpisodeConfig.from_keywords("wild", max_steps=3, guided=False, **SMALL)
    assert (config.d, config.n, config.graph_model) == (4, 100, "er")
    by_keywords = gym.make(env_id("wild"), max_steps=3, **SMALL)
    by_config = gym.make(env_id("wild"), config=config)
    direct = HeuresisEnv(config)
    first = [env.reset(seed=1)[1]["sha256"] for env in (by_keywords, by_config, direct)]
    assert len(set(first)) == 1
    assert by_config.unwrapped.episode_config is config  # passed down unchanged
    assert by_keywords.unwrapped.config() == by_config.unwrapped.config() == direct.config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_steps = 5  # type: ignore[misc]
    with pytest.raises(HeuresisError, match="either a config or keyword"):
        gym.make(env_id("lg"), config=config)  # the id's family is not the config's
    with pytest.raises(HeuresisError, match="either a config or keyword"):
        HeuresisEnv(config, max_steps=4)


def test_a_config_is_checked_when_made_however_it_is_made():
    with pytest.raises(HeuresisError, match="max_steps"):
        EpisodeConfig(family="lg", max_steps=0)
    with pytest.raises(HeuresisError, match="toolbox"):
        EpisodeConfig.from_keywords("lg", toolbox="everything")
    with pytest.raises(HeuresisError, match="SealedSalt"):
        EpisodeConfig(family="lg", split="test", salt="a string is not checked")  # type: ignore[arg-type]
    assert EpisodeConfig(family="lg").replace(max_steps=7).max_steps == 7
    with pytest.raises(HeuresisError, match="max_steps"):
        EpisodeConfig(family="lg").replace(max_steps=-1)


def test_the_sealed_salt_is_one_value_that_hides_its_secret():
    secret = new_salt()
    salt = sealing_salt("test", secret)
    assert isinstance(salt, SealedSalt) and secret not in repr(salt)
    assert sealing_salt("test", salt) is salt and sealing_salt("dev", secret) is None
    assert sealing_salt("test", "") is None  # explicitly public
    assert salt.matches(salt.digest) and salt.marker.endswith(salt.digest.rsplit("$")[-1])
    assert pickle.loads(pickle.dumps(salt)) == salt
    config = EpisodeConfig.from_keywords("lg", split="test", salt=secret, **SMALL)
    assert config.salt == salt and secret not in repr(config)
    # the value seals exactly as the string it was made from
    key = InstanceKey("lg", "test", 0, **SMALL)
    assert generate_instance(key, salt).sha256 == generate_instance(key, secret).sha256


WEAK = "s3cret-2024-05-01"


def test_every_entry_point_refuses_a_weak_salt_the_same_way(tmp_path, monkeypatch):
    """Item 2: one check, one message — through salt=... and through the variable."""
    expected = str(pytest.raises(HeuresisError, sealing_salt, "test", WEAK).value)
    key = InstanceKey("lg", "test", 0, **SMALL)
    entry_points = [
        lambda: gym.make(env_id("lg"), split="test", salt=WEAK, **SMALL),
        lambda: generate_instance(key, WEAK),
        lambda: question_set("lg", "test", salt=WEAK, **SMALL),
        lambda: RunRequest("pc-fisherz", split="test", salt=WEAK, out_dir=tmp_path / "r"),
        lambda: evaluate("pc-fisherz", families=["lg"], split="test", count=1, salt=WEAK,
                         out_dir=tmp_path / "run", progress=False, **SMALL),
    ]
    for entry in entry_points:
        with pytest.raises(HeuresisError) as refused:
            entry()
        assert str(refused.value) == expected
    monkeypatch.setenv(TEST_SALT_ENV, WEAK)
    for entry in (lambda: gym.make(env_id("lg"), split="test", **SMALL),
                  lambda: generate_instance(key), lambda: question_set("lg", "test", **SMALL)):
        with pytest.raises(HeuresisError) as refused:
            entry()
        assert str(refused.value) == expected
    assert not (tmp_path / "run").exists()


def test_a_run_request_is_checked_once_and_names_its_fields(tmp_path):
    request = RunRequest("pc-fisherz", families=["lg"], count=1, out_dir=tmp_path / "run",
                         settings={"max_steps": 5}, **SMALL)
    assert request.families == ("lg",) and request.settings.max_steps == 5
    assert set(RUN_ARGUMENTS) == {f.name for f in dataclasses.fields(RunRequest)}
    with pytest.raises(HeuresisError, match="repeats"):
        RunRequest("pc-fisherz", repeats=0)
    with pytest.raises(HeuresisError, match="unknown run arguments"):
        RunRequest.from_arguments({"policy_spec": "pc-fisherz", "out_dir": "x", "workerz": 2})
    with pytest.raises(HeuresisError, match="either a RunRequest"):
        evaluate(request, count=2)
    summary = evaluate(request, progress=False)
    assert summary.total_episodes == 1
