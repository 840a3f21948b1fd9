"""Training (agents.rl.training): bad input refused clearly, and progress said plainly. The
acceptance — a policy trained for minutes beats the guided start (PC-KCI) on `wild` instances
it never saw, with the paired interval above 0, every episode submitted — is the RL example's
test (tests/test_examples.py::test_train_repair_policy_learns_and_beats_the_guided_start_on_held
_out_instances): one training run checks both."""

from __future__ import annotations

import gymnasium as gym
import pytest

from agents.rl import load, save, train
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.registration import env_id
from tests.agents.rl.rl_fixtures import tiny_model


def test_bad_input_raises_clear_errors(tmp_path):
    with pytest.raises(UnknownNameError, match="maskable_ppo"):
        train(algo="dqn", out_dir=tmp_path)
    with pytest.raises(UnknownNameError, match="pairwise"):
        train(architecture="transformer", out_dir=tmp_path)
    with pytest.raises(HeuresisError, match="dev_count"):
        train(dev_count=0, out_dir=tmp_path)
    with pytest.raises(HeuresisError, match="overlap the training ones: \\[3, 4\\]"):
        train(dev_count=5, test_count=[3, 4, 5], test_split="dev", out_dir=tmp_path)
    with pytest.raises(UnknownNameError, match="test_split"):
        train(test_split="train", out_dir=tmp_path)
    with pytest.raises(HeuresisError, match="unknown hyperparameter"):
        train(hyperparameters={"learning_rte": 1e-3}, out_dir=tmp_path)
    with pytest.raises(HeuresisError, match="no trained model"):
        load(tmp_path)
    model, config = tiny_model("maskable_ppo")
    save(model, config, tmp_path)
    policy = load(tmp_path)
    env = gym.make(env_id("wild"), interface="rl", guided=True, d=4, n=200, indices=[0])
    observation, info = env.reset(seed=0)
    with pytest.raises(HeuresisError, match="d = 5"):
        policy.reset(observation, info)


def test_ppo_training_says_how_far_it_is_and_the_time_left():
    """Without a terminal (as here: pytest captures stderr) PPO's progress comes as plain
    lines with the share done and an estimate of the time left; no bar frame is drawn."""
    import sb3_contrib

    from agents.rl.training import LearningCurveCallback, TrainingProgress

    env = gym.make(env_id("lg"), interface="rl", d=4, n=200, max_steps=10)
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", env, n_steps=32, batch_size=16,
                                    n_epochs=1, seed=0, device="cpu")
    lines: list[str] = []
    curve = LearningCurveCallback()
    # 90 steps asked: PPO runs on to the end of its third 32-step rollout (96 steps)
    progress = TrainingProgress(90, lines.append, curve, every_seconds=0.0)
    assert progress.progress.bar.disable  # stderr is no terminal: no carriage-return frames
    model.learn(90, callback=[curve, progress])
    assert lines[0].startswith("PPO: 1 of 90 steps (1%)") and "left" in lines[0]
    assert lines[-1].startswith("PPO: 90 of 90 steps (100%)") and "left" not in lines[-1]
    # the last line is said once, not once per step past the total (issue 42)
    assert sum(line.startswith("PPO: 90 of 90") for line in lines) == 1
    assert any("mean F1 gain of the last" in line for line in lines)
