"""The language-model policy (agents.llm.policy): real SDK clients against a real loopback
chat server.

Every scripted case drives a Heuresis environment (wild, d = 5, n = 200) with the official
``openai`` client talking HTTP to :class:`agents.llm.server.ChatServer`. The assertions are on
what the environment received (steps, error observations, the submitted graph) and what the
policy reports (usage, retries, transcript).
"""

from __future__ import annotations

import pytest

from agents.llm.backends import BackendError
from agents.llm.policy import make_llm_policy
from agents.llm.server import ChatServer, ScriptedReply, delayed, http_error, text_reply, tool_call
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.policy import EpisodeSettings
from tests.agents.llm.llm_fixtures import edges_of, make_env, messages_of, openai_policy, play


def test_well_formed_tool_calls_drive_the_environment():
    script = [tool_call("ci_test", {"x": "X1", "y": "X2", "method": "fisherz"},
                        text="Thought: is X1 dependent on X2?", reasoning="check X1, X2"),
              tool_call("add_edge", {"x": "X1", "y": "X2"}),
              tool_call("submit", {})]
    settings = EpisodeSettings(max_steps=10, max_seconds=120, token_budget_per_turn=321)
    with ChatServer(script) as server:
        policy = openai_policy(server)
        result = play(policy, settings)
        policy.close()
    assert result.termination_reason == "submitted" and result.steps == 3
    assert edges_of(result) == {"X1 --> X2"}
    assert [r.status for r in server.requests] == [200, 200, 200]
    assert all(r.body["max_tokens"] == 321 for r in server.requests)
    tools = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert "ci_test" in tools and "deletion_log" not in tools  # unguided toolbox
    # the first call's answer is the env's CI-test output, sent back under the call's id
    second = messages_of(server, 1)
    call_id = second[-2]["tool_calls"][0]["id"]
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == call_id
    assert "X1 _||_ X2 by fisherz" in second[-1]["content"]
    assert "[9 steps left" in second[-1]["content"]
    usage = policy.usage()
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == server.served_usage()
    assert usage["api_retries"] == 0 and usage["turns"] == 3 and usage["model_calls"] == 3
    assert usage["cost_usd"] == 0.0  # "scripted" is priced at zero
    calls = [e for e in policy.transcript() if e["event"] == "model_call"]
    assert calls[0]["reply"]["reasoning"] == "check X1, X2"
    assert calls[0]["reply"]["text"] == "Thought: is X1 dependent on X2?"


def test_malformed_json_is_an_error_observation_that_costs_a_step():
    script = [tool_call("ci_test", '{"x": "X1", "y": '),
              text_reply('{"tool": "ci_test", "args": {"x": "X1", "y": "X7"}}'),
              tool_call("submit", {})]
    settings = EpisodeSettings(max_steps=10, max_seconds=120)
    with ChatServer(script) as server:
        policy = openai_policy(server)
        result = play(policy, settings)
    assert result.termination_reason == "submitted" and result.steps == 3
    first_answer = messages_of(server, 1)[-1]
    assert first_answer["role"] == "tool"
    assert first_answer["content"].startswith("Error: the action is not valid JSON")
    assert "[9 steps left" in first_answer["content"]
    second_answer = messages_of(server, 2)[-1]
    assert second_answer["role"] == "user" and "unknown variable" in second_answer["content"]
    assert "[8 steps left" in second_answer["content"]
    actions = [e for e in policy.transcript() if e["event"] == "action"]
    assert isinstance(actions[0]["action"], str)  # passed on as the model wrote it


def test_prose_with_an_embedded_action_and_an_unreadable_reply():
    script = [text_reply('I will test the pair first.\n{"tool": "ci_test", "args": {"x": "X1", '
                         '"y": "X3", "method": "fisherz"}} and then decide what to keep.'),
              text_reply("Hmm, I am not sure what to do next."),
              text_reply('Done.\n```json\n{"tool": "submit", "args": {"edges": ["X1 → X3", '
                         '"X4 - X5"]}}\n```\nThat is my answer.')]
    settings = EpisodeSettings(max_steps=10, max_seconds=120)
    with ChatServer(script) as server:
        policy = openai_policy(server)
        result = play(policy, settings)
    assert result.termination_reason == "submitted" and result.steps == 3
    assert edges_of(result) == {"X1 --> X3", "X4 --- X5"}  # normalized from → and -
    observation = messages_of(server, 1)[-1]
    assert observation["role"] == "user" and observation["content"].startswith("Observation:")
    assert "X1 _||_ X3 by fisherz" in observation["content"]
    assert messages_of(server, 2)[-1]["content"].startswith("Observation:\nError:")
    sources = [e["source"] for e in policy.transcript() if e["event"] == "action"]
    assert sources == ["text_json", "unparsed", "text_json"]


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_http_errors_are_retried_and_not_charged(status):
    script = [http_error(status, retry_after=0.01 if status == 429 else None),
              http_error(status),
              tool_call("submit", {"edges": ["X1 --> X2"]})]
    settings = EpisodeSettings(max_steps=10, max_seconds=120)
    with ChatServer(script) as server:
        policy = openai_policy(server)
        result = play(policy, settings)
    assert [r.status for r in server.requests] == [status, status, 200]
    assert result.steps == 1 and result.termination_reason == "submitted"
    assert policy.usage()["api_retries"] == 2 and policy.usage()["model_calls"] == 1
    assert edges_of(result) == {"X1 --> X2"}


def test_a_time_out_is_retried():
    script = [delayed(5.0, tool_call("ci_test", {"x": "X1", "y": "X2"})),
              tool_call("submit", {})]
    settings = EpisodeSettings(max_steps=10, max_seconds=120)
    with ChatServer(script) as server:
        policy = openai_policy(server, timeout=0.3)
        result = play(policy, settings)
    assert result.steps == 1 and result.termination_reason == "submitted"
    assert policy.usage()["api_retries"] == 1
    call = [e for e in policy.transcript() if e["event"] == "model_call"][0]
    assert call["seconds"] < 5.0  # the client gave up on the slow reply instead of waiting
    assert "time-out" in call["reply"]["retry_errors"][0]
    assert call["reply"]["tool_calls"][0]["function"]["name"] == "submit"


def test_final_edge_list_is_retried_once_and_submitted():
    script = [tool_call("ci_test", {"x": "X1", "y": "X2"}),
              tool_call("add_edge", {"x": "X3", "y": "X4"}),
              text_reply("Final edge list:\nX1 -> X2\nX2 -> X9"),
              text_reply("1. X1 -> X2\n2. X2 - X3")]
    settings = EpisodeSettings(max_steps=3, max_seconds=120)
    with ChatServer(script) as server:
        policy = openai_policy(server)
        result = play(policy, settings)
    assert result.termination_reason == "submitted" and result.steps == 3
    assert edges_of(result) == {"X1 --> X2", "X2 --- X3"}  # replaces the working graph
    usage = policy.usage()
    assert usage["model_calls"] == 4 and usage["turns"] == 3
    assert usage["final_turn"] == "edge_list_after_retry"
    final_ask = messages_of(server, 2)[-1]["content"]
    assert final_ask.startswith("FINAL TURN: the step budget is used up")
    retry_ask = messages_of(server, 3)[-1]["content"]
    assert "X9" in retry_ask and "unknown variable" in retry_ask


def test_final_turn_answers_stray_tool_calls_before_the_retry():
    script = [tool_call("ci_test", {"x": "X1", "y": "X2"}),
              tool_call("run_algorithm", {"name": "pc-fisherz"}),
              tool_call("submit", {"edges": ["X2 --> X4", "X4 --> X5"]})]
    settings = EpisodeSettings(max_steps=2, max_seconds=120, target="dag")
    with ChatServer(script) as server:
        policy = openai_policy(server)
        result = play(policy, settings)
    assert [r.status for r in server.requests] == [200, 200, 200]  # the server accepted them
    retry = messages_of(server, 2)
    assert retry[-2]["role"] == "tool" and retry[-2]["content"].startswith("Not run")
    assert result.termination_reason == "submitted" and result.steps == 2
    assert edges_of(result) == {"X2 --> X4", "X4 --> X5"}


def test_both_final_lists_rejected_submits_the_working_graph():
    script = [tool_call("add_edge", {"x": "X1", "y": "X2"}),
              text_reply("I cannot decide."),
              text_reply("X1 -> X2\nX2 -> X3\nX3 -> X1")]  # a cycle, refused under dag
    settings = EpisodeSettings(max_steps=2, max_seconds=120, target="dag")
    with ChatServer(script) as server:
        policy = openai_policy(server)
        result = play(policy, settings)
    assert result.termination_reason == "submitted"
    assert edges_of(result) == {"X1 --> X2"}
    assert policy.usage()["final_turn"] == "fallback_working_graph"
    final = [e for e in policy.transcript() if e["event"] == "final_turn"][0]
    assert "no edge list found" in final["problems"][0] and "cycle" in final["problems"][1]


def test_several_tool_calls_run_only_the_first():
    both = ScriptedReply(tool_calls=(("ci_test", {"x": "X1", "y": "X2"}),
                                     ("ci_test", {"x": "X2", "y": "X3"})))
    settings = EpisodeSettings(max_steps=10, max_seconds=120)
    with ChatServer([both, tool_call("submit", {})]) as server:
        policy = openai_policy(server)
        result = play(policy, settings)
    assert result.steps == 2
    answers = [m for m in messages_of(server, 1) if m["role"] == "tool"]
    assert "X1 _||_ X2" in answers[0]["content"] and answers[1]["content"].startswith("Not run")


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_wall_time_near_the_end_triggers_the_final_turn():
    clock = FakeClock()
    script = [tool_call("ci_test", {"x": "X1", "y": "X2"}), text_reply("X1 -> X2")]
    settings = EpisodeSettings(max_steps=50, max_seconds=600)
    with ChatServer(script) as server:
        policy = openai_policy(server, clock=clock)
        policy.configure(settings)
        env = make_env(settings)
        observation, info = env.reset(seed=0, options={"index": 0})
        policy.reset(observation, info)
        observation, *_ = env.step(policy.act(observation, info))
        clock.now += 598.0  # the wall budget is nearly spent
        action = policy.act(observation, info)
        _, _, terminated, _, info = env.step(action)
        env.close()
    assert terminated and info["termination_reason"] == "submitted"
    assert action == {"tool": "submit", "args": {"edges": ["X1 --> X2"]}}
    assert "the wall time is nearly over" in messages_of(server, 1)[-1]["content"]


def test_a_failed_call_on_a_normal_turn_still_submits():
    script = [http_error(400, "context length exceeded"), text_reply("X1 --- X2")]
    settings = EpisodeSettings(max_steps=10, max_seconds=120)
    with ChatServer(script) as server:
        policy = openai_policy(server)
        result = play(policy, settings)
    assert result.termination_reason == "submitted" and edges_of(result) == {"X1 --- X2"}
    assert policy.usage()["backend_errors"] == 1
    assert "model service failed" in messages_of(server, 1)[-1]["content"]


def test_exhausted_retries_then_final_turn():
    script = [http_error(503)] * 4 + [text_reply("[]")]
    settings = EpisodeSettings(max_steps=10, max_seconds=120)
    with ChatServer(script) as server:
        policy = openai_policy(server)
        result = play(policy, settings)
    assert result.termination_reason == "submitted" and edges_of(result) == set()
    assert policy.usage()["api_retries"] == 3 and policy.usage()["final_turn"] == "edge_list"


def test_authentication_errors_are_raised():
    settings = EpisodeSettings(max_steps=10, max_seconds=120)
    with ChatServer([http_error(401, "invalid api key")]) as server:
        policy = openai_policy(server)
        with pytest.raises(BackendError, match="401") as caught:
            play(policy, settings)
    assert caught.value.fatal and len(server.requests) == 1  # never retried


def test_text_mode_without_native_tools():
    script = [text_reply('Action: ci_test\nAction Input: {"x": "X1", "y": "X2"}'),
              text_reply('submit(edges=["X1 -> X2"])')]
    settings = EpisodeSettings(max_steps=10, max_seconds=120)
    with ChatServer(script) as server:
        policy = openai_policy(server, native_tools=False)
        result = play(policy, settings)
    assert "tools" not in server.requests[0].body
    assert "one JSON object" in messages_of(server, 0)[0]["content"]
    assert result.steps == 2 and edges_of(result) == {"X1 --> X2"}


def test_policy_cost_from_usage_fields():
    script = [ScriptedReply(tool_calls=(("ci_test", {"x": "X1", "y": "X2"}),),
                            usage=(1000, 200)),
              ScriptedReply(tool_calls=(("submit", {}),), usage=(3000, 50))]
    settings = EpisodeSettings(max_steps=10, max_seconds=120)
    with ChatServer(script) as server:
        policy = openai_policy(server, model="gpt-4o-mini")
        play(policy, settings)
    usage = policy.usage()
    assert usage["tokens"] == {"prompt": 4000, "completion": 250}
    assert usage["cost_usd"] == pytest.approx((4000 * 0.15 + 250 * 0.6) / 1e6)
    with ChatServer([ScriptedReply(tool_calls=(("submit", {}),), usage=(10, 10))]) as server:
        policy = openai_policy(server, model="no-such-model")
        play(policy, settings)
    assert policy.usage()["cost_usd"] is None  # unknown price: unknown cost, not zero


def test_factory_without_configuration_names_the_variables(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HEURESIS_LLM_BASE_URL",
                 "HEURESIS_LLM_BACKEND", "HEURESIS_LLM_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(HeuresisError) as caught:
        make_llm_policy()
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HEURESIS_LLM_BASE_URL"):
        assert variable in str(caught.value)
    with pytest.raises(HeuresisError, match="OPENAI_API_KEY"):
        make_llm_policy(backend="openai", model="gpt-4o")
    with pytest.raises(HeuresisError, match="HEURESIS_LLM_MODEL"):
        make_llm_policy(base_url="http://127.0.0.1:9/v1")
    with pytest.raises(UnknownNameError, match="heuristic"):
        make_llm_policy(backend="gemini")
    monkeypatch.setenv("HEURESIS_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("HEURESIS_LLM_MODEL", "llama3.1:8b")
    policy = make_llm_policy()
    assert policy.backend.kind == "openai" and policy.backend.base_url.startswith("http://127")
    assert policy.backend.max_tokens_parameter == "max_tokens"
    policy.close()
