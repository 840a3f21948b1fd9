"""Question-mode policies: qa-tools, and the language-model wrapper (llm-qa) against the real
loopback chat server through the openai client — tool calls, malformed answers, the
iteration cap's final turn, text mode, the code-only arm, and a run of the evaluation runner."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from agents.llm.backends import OpenAIChatBackend, RetrySchedule
from agents.llm.server import ChatRequest, ChatServer, ScriptedReply, text_reply, tool_call
from agents.qa import QuestionLLMPolicy, QuestionToolPolicy, read_answer
from agents.qa.prompts import FINAL_ANSWER_MARKER
from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import evaluate, load_run
from heuresis_env.policy import EpisodeSettings, run_episode
from heuresis_env.questions import KINDS, question_set
from tests.env.test_questions_env import edge_list

SMALL = {"d": 6, "n": 200}
KIND_IDS = {kind: k for k, kind in enumerate(KINDS)}
FAST_RETRY = RetrySchedule(max_retries=2, base_delay=0.01, max_delay=0.05)
SETTINGS = EpisodeSettings(max_steps=20, max_seconds=300.0)


def make_env(settings: EpisodeSettings = SETTINGS, **kwargs):
    return gym.make("Heuresis-qa-lg-v0", **SMALL, max_steps=settings.max_steps,
                    max_seconds=settings.max_seconds, toolbox=settings.toolbox,
                    disable_env_checker=True, **kwargs)


def play(policy, question: int, settings: EpisodeSettings = SETTINGS, **kwargs):
    policy.configure(settings)
    env = make_env(settings, **kwargs)
    try:
        return run_episode(env, policy, seed=0, options={"question": question})
    finally:
        env.close()


def llm_policy(server: ChatServer, **options) -> QuestionLLMPolicy:
    backend = OpenAIChatBackend("scripted", base_url=server.url, api_key="test", timeout=10.0,
                                retry=FAST_RETRY)
    return QuestionLLMPolicy(backend, **options)


def truth_text(question: int) -> str:
    truth = question_set("lg", "dev", **SMALL).question(question).truth
    return "yes" if truth else "no"


# ---- qa-tools ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(KINDS))
def test_qa_tools_answers_every_kind_in_a_few_steps(kind):
    policy = QuestionToolPolicy()
    result = play(policy, KIND_IDS[kind])
    assert result.terminated and result.termination_reason == "submitted"
    assert result.scores["answered"] == 1.0 and result.steps <= 4
    again = play(QuestionToolPolicy(), KIND_IDS[kind])
    assert again.scores == result.scores  # deterministic


def test_qa_tools_refuses_graph_episodes_and_bad_options():
    env = gym.make("Heuresis-lg-v0", **SMALL, disable_env_checker=True)
    with pytest.raises(HeuresisError, match="question episodes"):
        run_episode(env, QuestionToolPolicy(), seed=0)
    env.close()
    with pytest.raises(HeuresisError, match="unknown CI test"):
        QuestionToolPolicy(ci_method="chi2")


# ---- reading answers -------------------------------------------------------------------------------

def test_answers_are_read_from_arguments_and_text():
    yes_no = {"answer_type": "yes_no"}
    assert read_answer("Yes.", yes_no) == "yes" and read_answer(False, yes_no) == "no"
    assert read_answer("Thought: not sure... the answer is no", yes_no) == "no"
    number = {"answer_type": "number"}
    assert read_answer("The effect is about 0.5 per unit, so the answer: -1.25e0",
                       number) == -1.25
    assert read_answer("0.7", number) == 0.7 and read_answer(2, number) == 2.0
    edges = {"answer_type": "edges", "subset_names": ["A", "B", "C"]}
    assert read_answer("A -> B\nC --- B", edges) == ["A --> B", "B --- C"]
    assert read_answer("[]", edges) == []
    for source, question in (("maybe", yes_no), ("none", number), ("A --> Q", edges)):
        with pytest.raises(HeuresisError):
            read_answer(source, question)


# ---- the language-model wrapper in question mode ---------------------------------------------------

def test_tool_calls_a_malformed_answer_and_a_correct_one():
    question = KIND_IDS["independence"]
    env = make_env()
    _, info = env.reset(seed=0, options={"question": question})
    env.close()
    x, y = info["question"]["x_name"], info["question"]["y_name"]
    script = [tool_call("ci_test", {"x": x, "y": y, "method": "fisherz"},
                        text="Thought: test the pair marginally."),
              tool_call("answer", {"answer": "probably"}),
              tool_call("answer", {"answer": truth_text(question)})]
    with ChatServer(script) as server:
        policy = llm_policy(server)
        result = play(policy, question)
    assert result.terminated and result.steps == 3
    assert result.scores == {"correct": 1.0, "answered": 1.0}
    first = server.requests[0].body
    tools = [t["function"]["name"] for t in first["tools"]]
    assert "answer" in tools and "submit" not in tools
    system = first["messages"][0]["content"]
    assert "ReAct" in system and "at most 15 iterations" in system and "ci_test" in system
    assert "QUESTION (variable level, IT)" in first["messages"][1]["content"]
    rejected = server.requests[2].body["messages"][-1]
    assert rejected["role"] == "tool" and 'answer "yes" or "no"' in rejected["content"]
    usage = policy.usage()
    assert usage["model_calls"] == 3 and usage["max_iterations"] == 15
    assert any(e["event"] == "action" for e in policy.transcript())


def test_the_iteration_cap_asks_for_the_answer_and_reads_it_from_text():
    question = KIND_IDS["direct_cause"]
    script = [tool_call("describe_data"),
              tool_call("run_algorithm", {"name": "pc-fisherz", "save_as": "pc"}),
              text_reply(f"Thought: the graph shows it.\nAnswer: {truth_text(question)}")]
    with ChatServer(script) as server:
        policy = llm_policy(server, max_iterations=3)
        result = play(policy, question)
    assert result.steps == 3 and result.scores["correct"] == 1.0
    final_ask = server.requests[2].body["messages"][-1]["content"]
    assert final_ask.startswith(FINAL_ANSWER_MARKER) and "yes or no" in final_ask
    assert policy.usage()["final_turn"] == "answer"


def test_an_unreadable_final_answer_is_retried_once_then_left_unanswered():
    question = KIND_IDS["average_effect"]
    script = [tool_call("describe_data"), text_reply("I cannot tell."),
              text_reply("Still no idea.")]
    settings = EpisodeSettings(max_steps=6, max_seconds=300.0)
    with ChatServer(script) as server:
        policy = llm_policy(server, max_iterations=2)
        result = play(policy, question, settings)
    assert len(server.requests) == 3  # no model call after giving up
    assert "(retry)" in server.requests[2].body["messages"][-1]["content"]
    assert result.truncated and result.steps == 6
    assert result.scores["answered"] == 0.0 and result.scores["correct"] == 0.0
    assert policy.usage()["final_turn"] == "unanswered"


def test_a_graph_question_in_text_mode():
    question = KIND_IDS["partial_graph"]
    truth = question_set("lg", "dev", **SMALL).question(question).truth
    env = make_env()
    _, info = env.reset(seed=0, options={"question": question})
    env.close()
    edges = edge_list(truth, info["names"])
    action = json.dumps({"tool": "answer", "args": {"answer": edges}})
    with ChatServer([text_reply(f"Thought: done.\n```json\n{action}\n```")]) as server:
        policy = llm_policy(server, native_tools=False)
        result = play(policy, question)
    assert "tools" not in server.requests[0].body
    assert "one JSON object" in server.requests[0].body["messages"][0]["content"]
    assert result.scores["correct"] == 1.0 and result.scores["f1"] == 1.0


def test_the_code_only_arm_offers_run_code_and_answer():
    question = KIND_IDS["independence"]
    code = "import numpy as np\nprint(round(float(np.corrcoef(X[:, 0], X[:, 1])[0, 1]), 3))"
    script = [tool_call("run_code", {"code": code}),
              tool_call("answer", {"answer": truth_text(question)})]
    settings = EpisodeSettings(max_steps=10, max_seconds=300.0, toolbox="code")
    with ChatServer(script) as server:
        policy = llm_policy(server)
        result = play(policy, question, settings)
    tools = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert tools == ["run_code", "answer"]
    assert "Your only tools are run_code" in server.requests[0].body["messages"][0]["content"]
    code_output = server.requests[1].body["messages"][-1]["content"]
    assert "Error" not in code_output.split("\n")[0], code_output
    assert result.scores["correct"] == 1.0


def _answers_yes(request: ChatRequest) -> ScriptedReply:
    """A stand-in model for the runner test: describe the data, then answer "yes"."""
    if not any(m.get("role") == "assistant" for m in request.messages):
        return tool_call("describe_data")
    if FINAL_ANSWER_MARKER in str(request.messages[-1].get("content")):
        return text_reply("yes")
    return tool_call("answer", {"answer": "yes"})


def runner_policy() -> QuestionLLMPolicy:
    """A factory the evaluation runner can build (module:attr spec)."""
    server = ChatServer(responder=_answers_yes)
    backend = OpenAIChatBackend("scripted", base_url=server.url, api_key="test", timeout=10.0,
                                retry=FAST_RETRY)
    return QuestionLLMPolicy(backend, resources=[server])


def test_the_evaluation_runner_drives_llm_qa_and_stores_transcripts(tmp_path):
    out = tmp_path / "llm-qa"
    evaluate("tests.agents.test_qa:runner_policy", families=["lg"], split="dev", count=6,
             settings=SETTINGS, out_dir=out, task="qa", progress=False, **SMALL)
    run = load_run(out)
    assert len(run.episodes) == 6 and all(e.transcript for e in run.episodes)
    for episode in run.episodes:
        assert episode.question["answer"] == "yes" and episode.steps == 2
        assert episode.prompt_tokens and episode.prompt_tokens > 0
        assert episode.score("correct") == float(episode.question["truth"]["answer"] == "yes")
