"""Question episodes (task="qa"): ids, the question at reset, the typed answer tool, scoring
from the hidden truth, truncation, decoy names, the code toolbox, hidden truth, replay."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from heuresis_env.env import replay_trace
from heuresis_env.env.core import HeuresisEnv
from heuresis_env.errors import HeuresisError
from heuresis_env.graphs import EdgeMark
from heuresis_env.questions import (
    DECOY_WORDS,
    KINDS,
    EffectTruth,
    GraphTarget,
    Question,
    QuestionSet,
    question_set,
)
from heuresis_env.registration import REGISTERED_FAMILIES, env_id, register_envs
from tests.env.test_env import _walk

register_envs()
SMALL = {"d": 6, "n": 200}
KIND_IDS = {kind: k for k, kind in enumerate(KINDS)}  # question k is of the k-th kind


def make(family: str = "lg", **kwargs) -> gym.Env:
    return gym.make(env_id(family, "qa"), **{**SMALL, **kwargs})


def the_question(family: str, question: int, split: str = "dev") -> Question:
    return question_set(family, split, **SMALL).question(question)


def edge_list(truth: GraphTarget, names) -> list[str]:
    """The target as an edge list: arrowheads into colliders, other edges undirected."""
    marks, edges = truth.marks(), []
    symbols = {int(EdgeMark.TAIL): ("-", "-"), int(EdgeMark.ARROW): ("<", ">")}
    for a in range(len(truth.variables)):
        for b in range(a + 1, len(truth.variables)):
            if marks[a, b]:
                left, right = symbols[int(marks[b, a])][0], symbols[int(marks[a, b])][1]
                edges.append(f"{names[truth.variables[a]]} {left}-{right} "
                             f"{names[truth.variables[b]]}")
    return edges


def right_answer(question: Question, names) -> object:
    truth = question.truth
    if isinstance(truth, bool):
        return "yes" if truth else "no"
    if isinstance(truth, EffectTruth):
        return truth.value * 1.05
    return edge_list(truth, names)


def wrong_answer(question: Question, names) -> object:
    truth = question.truth
    if isinstance(truth, bool):
        return "no" if truth else "yes"
    if isinstance(truth, EffectTruth):
        return truth.value * 1.2
    return edge_list(truth, names)[1:]  # one edge missing


def test_question_ids_are_registered_with_string_entry_points():
    for family in REGISTERED_FAMILIES:
        spec = gym.registry[env_id(family, "qa")]
        assert spec.entry_point == "heuresis_env.env.core:HeuresisEnv"
        assert spec.kwargs == {"family": family, "task": "qa"}


def test_check_env_on_a_question_id():
    env = make("lg")
    check_env(env.unwrapped)
    env.close()


@pytest.mark.slow
@pytest.mark.parametrize("family", REGISTERED_FAMILIES)
def test_check_env_on_every_question_id(family):
    env = make(family)
    check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_is_scored_from_the_truth(kind):
    question = the_question("lg", KIND_IDS[kind])
    for answer, correct in ((right_answer, 1.0), (wrong_answer, 0.0)):
        env = make("lg")
        observation, info = env.reset(seed=0, options={"question": KIND_IDS[kind]})
        assert info["question"]["kind"] == kind and "truth" not in info["question"]
        assert info["instance_index"] == question.public.instance_index
        text = observation["text"]
        assert text.startswith("TASK: answer a causal question")
        assert question.public.text(info["names"]) in text
        assert "answer(answer)" in text and "submit(" not in text
        names = info["names"]
        _, reward, terminated, truncated, final = env.step(
            {"tool": "answer", "args": {"answer": answer(question, names)}})
        assert terminated and not truncated and final["termination_reason"] == "submitted"
        assert final["scores"]["correct"] == correct == reward
        assert final["scores"]["answered"] == 1.0
        assert final["question"]["truth"] == question.truth_dict()
        if isinstance(question.truth, GraphTarget):
            assert (final["scores"]["f1"] == 1.0) == (correct == 1.0)
        env.close()


def test_malformed_answers_are_error_observations_and_the_episode_goes_on():
    env = make("lg", max_steps=20)
    _, info = env.reset(seed=0, options={"question": KIND_IDS["whole_graph"]})
    names = info["names"]
    bad = [("yes", "edge list"), (0.5, "edge list"), ([f"{names[0]} ~> {names[1]}"], "cannot"),
           ([f"{names[0]} --> Q9"], "unknown variable"),
           ([f"{names[0]} --> {names[1]}", f"{names[1]} --- {names[0]}"], "duplicate")]
    for step, (answer, message) in enumerate(bad, start=1):
        observation, reward, terminated, truncated, step_info = env.step(
            {"tool": "answer", "args": {"answer": answer}})
        assert not terminated and not truncated and reward == 0.0
        assert message in observation["last_error"] and step_info["error"]
        assert observation["budget_left"][0] == 20 - step
    _, info = env.reset(seed=0, options={"question": KIND_IDS["partial_graph"]})
    question = the_question("lg", KIND_IDS["partial_graph"])
    outside = next(i for i in range(SMALL["d"]) if i not in question.public.subset)
    inside = question.public.subset[0]
    observation, *_ = env.step({"tool": "answer", "args": {"answer": [
        f"{info['names'][inside]} --> {info['names'][outside]}"]}})
    assert "not one of the question's variables" in observation["last_error"]
    _, info = env.reset(seed=0, options={"question": KIND_IDS["average_effect"]})
    for answer in ("yes", [], float("nan"), True):
        observation, *_ = env.step({"tool": "answer", "args": {"answer": answer}})
        assert observation["last_error"], answer
    observation, reward, terminated, *_ = env.step({"tool": "answer", "args": {"answer": "0.5"}})
    assert terminated and observation["last_error"] == ""
    env.close()


def test_a_question_left_unanswered_is_wrong():
    env = make("lg", max_steps=2)
    env.reset(seed=0, options={"question": KIND_IDS["independence"]})
    env.step({"tool": "describe_data"})
    _, reward, terminated, truncated, info = env.step({"tool": "show_graph"})
    assert truncated and not terminated and info["termination_reason"] == "step_budget"
    assert info["scores"] == {"correct": 0.0, "answered": 0.0} and reward == 0.0
    assert info["question"]["answer"] is None
    env.close()


def test_tools_work_in_question_episodes_and_submit_is_not_offered():
    env = make("lg")
    _, info = env.reset(seed=0, options={"question": KIND_IDS["direct_cause"]})
    question = info["question"]
    observation, *_ = env.step({"tool": "run_algorithm", "args": {"name": "pc-fisherz",
                                                                  "save_as": "pc"}})
    assert observation["last_error"] == ""
    observation, _, _, _, step = env.step({"tool": "direct_cause", "args": {
        "x": question["x_name"], "y": question["y_name"], "graph": "pc"}})
    assert step["data"]["answer"] in ("yes", "no", "undetermined")
    observation, *_ = env.step({"tool": "submit", "args": {}})
    assert "question episodes" not in observation["last_error"]
    assert "graph-recovery episodes" in observation["last_error"]
    graph_env = gym.make(env_id("lg"), **SMALL)
    graph_env.reset(seed=0)
    observation, *_ = graph_env.step({"tool": "answer", "args": {"answer": "yes"}})
    assert "question episodes (task='qa')" in observation["last_error"]
    graph_env.close()
    env.close()


def test_reset_picks_questions_by_id_and_refuses_instance_indices():
    env = make("lg", questions=[4, 5])
    seen = {env.reset(seed=seed)[1]["question"]["id"] for seed in range(12)}
    assert seen == {4, 5}
    with pytest.raises(HeuresisError, match="options=\\{'question': q\\}"):
        env.reset(seed=0, options={"index": 3})
    with pytest.raises(HeuresisError, match="0..89"):
        env.reset(seed=0, options={"question": 90})
    env.close()
    graph_env = gym.make(env_id("lg"), **SMALL)
    with pytest.raises(HeuresisError, match="unknown reset option"):
        graph_env.reset(seed=0, options={"question": 1})
    graph_env.close()


def test_configurations_question_mode_does_not_support_are_refused():
    for kwargs, message in (({"interface": "rl"}, "text view only"),
                            ({"reward": "shaped"}, "reward='shaped'"),
                            ({"guided": True, "name_mode": "decoy"}, "guided=False"),
                            ({"name_mode": "fancy"}, "unknown name mode")):
        with pytest.raises(HeuresisError, match=message):
            HeuresisEnv(family="lg", task="qa", **SMALL, **kwargs)
    with pytest.raises(HeuresisError, match="task='qa'"):
        HeuresisEnv(family="lg", name_mode="decoy", **SMALL)
    with pytest.raises(HeuresisError, match="unknown task"):
        HeuresisEnv(family="lg", task="quiz", **SMALL)


def test_decoy_names_reach_the_agent_and_never_scoring():
    question = the_question("lg", KIND_IDS["whole_graph"])
    env = make("lg", name_mode="decoy")
    observation, info = env.reset(seed=0, options={"question": KIND_IDS["whole_graph"]})
    names = info["names"]
    assert any(set(names) <= set(words) for words in DECOY_WORDS.values())
    assert names == list(env.unwrapped.names)
    assert all(name in observation["text"] for name in names) and "X1," not in observation["text"]
    observation, *_ = env.step({"tool": "ci_test", "args": {"x": names[0], "y": names[1]}})
    assert observation["last_error"] == ""
    observation, *_ = env.step({"tool": "ci_test", "args": {"x": "X1", "y": "X2"}})
    assert "unknown variable" in observation["last_error"]
    observation, *_ = env.step({"tool": "run_algorithm", "args": {"name": "pc-fisherz"}})
    assert any(name in observation["text"] for name in names) and "X1" not in observation["text"]
    _, reward, terminated, _, final = env.step(
        {"tool": "answer", "args": {"answer": edge_list(question.truth, names)}})
    assert terminated and reward == 1.0
    assert final["question"]["name_mode"] == "decoy"
    assert not any(name in str(final["question"]) for name in names)  # positions only
    # the same question under other names is the same question
    again = make("lg", name_mode="decoy")
    assert again.reset(seed=5, options={"question": KIND_IDS["whole_graph"]})[1]["names"] == names
    again.close()
    env.close()


def test_the_code_toolbox_offers_run_code_and_answer_only():
    env = make("lg", toolbox="code")
    observation, _ = env.reset(seed=0, options={"question": 0})
    assert [t.name for t in env.unwrapped.offered_tools] == ["run_code", "answer"]
    assert "ci_test(" not in observation["text"]
    observation, *_ = env.step({"tool": "ci_test", "args": {"x": "X1", "y": "X2"}})
    assert "not in the code toolbox" in observation["last_error"]
    names = [s["function"]["name"] for s in env.unwrapped.tool_schemas()]
    assert names == ["run_code", "answer"]
    env.close()


def test_the_truth_is_not_reachable_through_attributes():
    env = make("lg")
    for question in (KIND_IDS["collider"], KIND_IDS["whole_graph"], KIND_IDS["average_effect"]):
        env.reset(seed=0, options={"question": question})
        env.step({"tool": "describe_data"})
        for obj in _walk(env):
            assert not isinstance(obj, Question | QuestionSet | GraphTarget | EffectTruth), \
                type(obj)
        info = env.step({"tool": "show_graph"})[4]
        assert "scores" not in info and "question" not in info
    env.close()


def test_a_question_trace_replays_with_the_same_scores(tmp_path):
    env = make("lg", trace_path=str(tmp_path), name_mode="decoy")
    _, info = env.reset(seed=3, options={"question": KIND_IDS["conditional_independence"]})
    question = info["question"]
    env.step({"tool": "ci_test", "args": {"x": question["x_name"], "y": question["y_name"],
                                          "given": question["given_names"]}})
    env.step({"tool": "answer", "args": {"answer": "maybe"}})
    final = env.step({"tool": "answer", "args": {"answer": "yes"}})[4]
    trace = env.unwrapped.trace_file
    env.close()
    report = replay_trace(trace)
    assert report.ok and report.replayed_scores == final["scores"]
    assert not report.output_mismatches


def test_every_question_of_a_set_opens_and_reads_its_answer_type():
    env = make("lg", max_steps=3)
    for question in range(len(KINDS) * 2):
        _, info = env.reset(seed=0, options={"question": question})
        answer_type = info["question"]["answer_type"]
        assert answer_type == KINDS[info["question"]["kind"]].answer_type
        if answer_type == "edges":
            assert info["question"]["subset_names"]
        if info["question"]["kind"] == "average_effect":
            low, high = info["question"]["low"], info["question"]["high"]
            assert low < high and f"{high:g} instead of {low:g}" in info["question"]["text"]
    env.close()


def test_the_answer_is_stored_by_position():
    env = make("lg")
    env.reset(seed=0, options={"question": KIND_IDS["partial_graph"]})
    question = the_question("lg", KIND_IDS["partial_graph"])
    names = env.unwrapped.names
    final = env.step({"tool": "answer", "args": {"answer": edge_list(question.truth, names)}})[4]
    assert np.array_equal(np.asarray(final["question"]["answer"]), question.truth.marks())
    env.close()
