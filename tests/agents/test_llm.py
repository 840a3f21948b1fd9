"""The language-model wrapper: real SDK clients against a real loopback chat server.

Every scripted case drives a Heuresis environment (wild, d = 5, n = 200) with the official
``openai`` (or ``anthropic``) client talking HTTP to :class:`agents.llm.server.ChatServer`,
which refuses malformed conversations as the real services do. The assertions are on what the
environment received (steps, error observations, the submitted graph) and what the policy
reports (usage, retries, transcript).
"""

from __future__ import annotations

import json
import time

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import heuresis_env  # noqa: F401 - registers the environments
from agents.llm.backends import (
    AnthropicBackend,
    BackendError,
    ChatReply,
    DeadlineExceeded,
    OpenAIChatBackend,
    ReplayBackend,
    RetrySchedule,
    ToolCall,
    anthropic_messages,
    call_with_retries,
)
from agents.llm.parsing import (
    EdgeListError,
    extract_action,
    find_json_action,
    parse_edge_list,
    split_reasoning,
)
from agents.llm.policy import LLMPolicy, make_heuristic_llm_policy, make_llm_policy
from agents.llm.prices import PRICES_ENV_VAR, ModelPrice, PriceTable
from agents.llm.prompts import PROMPT_LEVELS, final_request, system_prompt
from agents.llm.server import (
    ChatServer,
    ScriptedReply,
    delayed,
    http_error,
    text_reply,
    tool_call,
)
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.policy import EpisodeSettings, run_episode

NAMES = [f"X{i}" for i in range(1, 6)]
FAST_RETRY = RetrySchedule(max_retries=3, base_delay=0.01, max_delay=0.05)


def make_env(settings: EpisodeSettings):
    """An environment with the settings' budgets, as the evaluation runner builds it."""
    return gym.make("Heuresis-wild-v0", d=5, n=200, max_steps=settings.max_steps,
                    max_seconds=settings.max_seconds, target=settings.target,
                    toolbox=settings.toolbox, guided=settings.guided, disable_env_checker=True)


def openai_policy(server: ChatServer, model: str = "scripted", timeout: float = 5.0,
                  **options) -> LLMPolicy:
    backend = OpenAIChatBackend(model, base_url=server.url, api_key="test", timeout=timeout,
                                retry=FAST_RETRY)
    return LLMPolicy(backend, **options)


def play(policy: LLMPolicy, settings: EpisodeSettings, index: int = 0):
    policy.configure(settings)
    env = make_env(settings)
    try:
        return run_episode(env, policy, seed=0, options={"index": index})
    finally:
        env.close()


def edges_of(result) -> set[str]:
    from heuresis_env.graphs import Graph

    return {str(e) for e in Graph.from_dict(result.final_graph).edges()}


def messages_of(server: ChatServer, k: int) -> list[dict]:
    return server.requests[k].body["messages"]


# ---- scripted episodes through the openai client ---------------------------------------------

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


# ---- the Anthropic backend --------------------------------------------------------------------

def test_anthropic_backend_against_the_messages_endpoint():
    script = [http_error(429, retry_after=0.01),
              tool_call("ci_test", {"x": "X1", "y": "X2"}, text="Thought: test first.",
                        reasoning="X1 and X2 look related"),
              tool_call("orientation_probe", {"x": "X1"}),  # bad arguments: an error step
              text_reply("Let me finish.\nFinal edge list: X1 -> X2, X3 -> X4")]
    settings = EpisodeSettings(max_steps=3, max_seconds=120, token_budget_per_turn=500)
    with ChatServer(script) as server:
        backend = AnthropicBackend("claude-haiku-4-5", base_url=server.root_url,
                                   api_key="test", timeout=5.0, retry=FAST_RETRY)
        policy = LLMPolicy(backend)
        result = play(policy, settings)
    assert [r.status for r in server.requests] == [429, 200, 200, 200]
    assert result.termination_reason == "submitted" and result.steps == 3
    assert edges_of(result) == {"X1 --> X2", "X3 --> X4"}
    body = server.requests[2].body
    assert body["max_tokens"] == 500 and body["system"].startswith("You are a causal")
    assert body["tools"][0]["input_schema"]["type"] == "object"
    assistant, user = body["messages"][-2], body["messages"][-1]
    assert [b["type"] for b in assistant["content"]] == ["thinking", "text", "tool_use"]
    assert assistant["content"][0]["signature"].startswith("scripted-signature")
    assert user["content"][0]["type"] == "tool_result"
    assert user["content"][0]["tool_use_id"] == assistant["content"][2]["id"]
    usage = policy.usage()
    assert usage["api_retries"] == 1
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == server.served_usage()
    prompt, completion = server.served_usage()
    assert usage["cost_usd"] == pytest.approx((1.0 * prompt + 5.0 * completion) / 1e6)


def test_anthropic_message_conversion_merges_roles():
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "a", "type": "function",
                     "function": {"name": "ci_test", "arguments": "{bad"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "out"},
                {"role": "user", "content": "FINAL TURN"}]
    system, converted = anthropic_messages(messages)
    assert system == "sys" and [m["role"] for m in converted] == ["user", "assistant", "user"]
    assert converted[1]["content"][0]["input"] == {"unparsed_arguments": "{bad"}
    assert [b["type"] for b in converted[2]["content"]] == ["tool_result", "text"]


# ---- the replay backend and retries ---------------------------------------------------------

def test_replay_backend_serves_in_order_and_records_requests():
    boom = BackendError("boom")
    backend = ReplayBackend(["hello", {"tool_calls": [{"name": "submit", "arguments": {}}]},
                             boom])
    first = backend.complete([{"role": "user", "content": "a"}], None, 10)
    second = backend.complete([{"role": "user", "content": "b"}], [{"x": 1}], 20)
    assert first.text == "hello" and second.tool_calls[0].name == "submit"
    assert second.tool_calls[0].arguments == "{}"
    assert [r["max_tokens"] for r in backend.requests] == [10, 20]
    with pytest.raises(BackendError, match="boom"):
        backend.complete([], None, 5)
    with pytest.raises(BackendError, match="no reply left"):
        backend.complete([], None, 5)
    with pytest.raises(HeuresisError, match="max_tokens"):
        backend.complete([], None, 0)


def test_replaying_a_transcript_reproduces_the_episode():
    script = [tool_call("ci_test", {"x": "X2", "y": "X3", "method": "kci"}),
              text_reply('{"tool": "add_edge", "args": {"x": "X2", "y": "X3"}}'),
              text_reply("X2 --> X3\nX1 --- X5")]
    settings = EpisodeSettings(max_steps=3, max_seconds=120)
    with ChatServer(script) as server:
        live = openai_policy(server)
        live_result = play(live, settings)
    replayed = LLMPolicy(ReplayBackend.from_transcript(live.transcript()))
    replay_result = play(replayed, settings)
    assert edges_of(live_result) == edges_of(replay_result) == {"X2 --> X3", "X1 --- X5"}
    actions = [[e["action"] for e in p.transcript() if e["event"] == "action"]
               for p in (live, replayed)]
    assert actions[0] == actions[1]
    assert replayed.usage()["prompt_tokens"] == live.usage()["prompt_tokens"]


def test_retry_schedule_backs_off_exponentially_with_jitter():
    schedule = RetrySchedule(max_retries=5, base_delay=1.0, max_delay=8.0, jitter=0.5)
    rng = np.random.default_rng(0)
    delays = [schedule.delay(k, rng) for k in range(5)]
    for k, wait in enumerate(delays):
        cap = min(8.0, 2.0 ** k)
        assert 0.5 * cap <= wait <= cap
    assert schedule.delay(0, rng, retry_after=3.0) == 3.0
    assert schedule.delay(0, rng, retry_after=100.0) == 8.0
    with pytest.raises(HeuresisError):
        RetrySchedule(max_retries=-1)


def test_call_with_retries_respects_the_deadline():
    from agents.llm.backends import Failure

    attempts = []

    def attempt(timeout):
        attempts.append(timeout)
        raise TimeoutError("slow")

    def classify(exc):
        return Failure(True, str(exc)) if isinstance(exc, TimeoutError) else None

    waits = []
    with pytest.raises(DeadlineExceeded):
        call_with_retries(attempt, classify, RetrySchedule(max_retries=10, base_delay=1.0),
                          np.random.default_rng(0), deadline=time.monotonic() + 0.5,
                          timeout=30.0, sleep=waits.append)
    assert len(attempts) == 1 and attempts[0] <= 0.5 and waits == []
    with pytest.raises(ValueError, match="not an API error"):
        call_with_retries(lambda t: (_ for _ in ()).throw(ValueError("not an API error")),
                          classify, FAST_RETRY, np.random.default_rng(0))


# ---- prices and cost --------------------------------------------------------------------------

def test_price_lookup_and_cost(tmp_path, monkeypatch):
    monkeypatch.delenv(PRICES_ENV_VAR, raising=False)
    table = PriceTable.load()
    usage = {"prompt": 1_000_000, "completion": 1_000_000}
    assert table.cost("gpt-4o", usage) == pytest.approx(12.5)
    assert table.cost("gpt-4o-2024-08-06", usage) == pytest.approx(12.5)
    assert table.cost("gpt-4o-mini-2024-07-18", usage) == pytest.approx(0.75)
    assert table.cost("openai/gpt-4.1-mini", usage) == pytest.approx(2.0)
    assert table.cost("gpt-4o", {**usage, "cached_prompt": 400_000}) == pytest.approx(
        0.6 * 2.5 + 0.4 * 1.25 + 10.0)
    assert table.cost("gpt-4ox", usage) is None  # a longer name is not a snapshot
    assert table.cost("llama3.1:8b", usage) is None
    user = tmp_path / "prices.json"
    user.write_text(json.dumps({"models": {"llama3.1": {"input": 0, "output": 0},
                                           "gpt-4o": {"input": 1.0, "output": 2.0},
                                           "*": {"input": 5.0, "output": 5.0}}}))
    monkeypatch.setenv(PRICES_ENV_VAR, str(user))
    table = PriceTable.load()
    assert table.cost("llama3.1:8b", usage) == 0.0
    assert table.cost("gpt-4o", usage) == pytest.approx(3.0)
    assert table.cost("anything-else", usage) == pytest.approx(10.0)
    assert table.cost("gpt-4o-mini", usage) == pytest.approx(0.75)  # shipped entries remain
    assert ModelPrice(1.0, 2.0).cost({"prompt": 10, "completion": 5}) == pytest.approx(2e-5)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"models": {"m": {"input": -1, "output": 0}}}))
    with pytest.raises(HeuresisError, match="number ≥ 0"):
        PriceTable.load(bad)
    with pytest.raises(HeuresisError, match="does not exist"):
        PriceTable.load(tmp_path / "missing.json")


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


# ---- the factory and the heuristic model -------------------------------------------------------

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


def test_heuristic_model_plays_an_episode_end_to_end():
    from heuresis_env.discovery.algorithms import run_algorithm

    settings = EpisodeSettings(max_steps=20, max_seconds=300, prompt_level=4)
    policy = make_heuristic_llm_policy()
    try:
        result = play(policy, settings)
    finally:
        policy.close()
    assert result.termination_reason == "submitted"
    tools = [e["action"]["tool"] for e in policy.transcript() if e["event"] == "action"]
    assert tools[:2] == ["run_algorithm", "run_algorithm"] and tools[-1] == "submit"
    assert 3 <= len(tools) <= 6
    env = make_env(settings)
    _, info = env.reset(seed=0, options={"index": 0})
    env.close()
    pc_kci = run_algorithm("pc-kci", info["data"], info["names"])
    from heuresis_env.graphs import Graph

    submitted = Graph.from_dict(result.final_graph).skeleton()
    assert np.all(submitted[pc_kci.graph.skeleton()])  # PC-KCI's edges are all kept
    assert policy.usage()["cost_usd"] == 0.0 and policy.usage()["model_calls"] == len(tools)


def test_heuristic_policy_under_the_evaluation_runner():
    from heuresis_env.evaluation.episode import EpisodeRunner, EpisodeTask, RunSpec

    settings = EpisodeSettings(max_steps=4, max_seconds=300)
    spec = RunSpec(policy="llm-heuristic", policy_options={}, settings=settings, d=5, n=200)
    policy = make_heuristic_llm_policy(native_tools=False)
    runner = EpisodeRunner(spec, "test", policy=policy)
    try:
        outcome = runner.run(EpisodeTask("wild/dev/0", "wild", "dev", 0, 0, 0))
    finally:
        runner.close()
    record = outcome.record
    assert record["error"] is None and record["termination_reason"] == "submitted"
    assert record["tokens"]["prompt"] > 0 and record["cost_usd"] == 0.0
    assert record["api_retries"] == 0
    assert any(e["event"] == "model_call" for e in outcome.transcript)


# ---- prompts ----------------------------------------------------------------------------------

FAMILY_WORDS = ("lg", "anm", "hetero", "wild", "mixed", "gauntlet")


@pytest.mark.parametrize("target", ["none", "cpdag", "dag"])
@pytest.mark.parametrize("toolbox", ["full", "minimal"])
@pytest.mark.parametrize("guided", [False, True])
def test_prompt_levels_are_cumulative_and_never_name_the_family(target, toolbox, guided):
    import re

    prompts = [system_prompt(level, target, toolbox=toolbox, guided=guided)
               for level in PROMPT_LEVELS]
    for lower, higher in zip(prompts, prompts[1:]):
        assert higher.startswith(lower) and len(higher) > len(lower)
    for prompt in prompts + [final_request(NAMES, target, "steps")]:
        words = set(re.findall(r"[a-z]+", prompt.lower()))
        assert not words & set(FAMILY_WORDS)
    full = prompts[-1]
    assert ("run_code" in full) == (toolbox == "full")
    assert ("stability" in full) == (toolbox == "full")
    assert ("deletion_log" in full) == guided
    assert "Stated target" in prompts[0] and "PC" not in prompts[0]
    assert ("orientation_probe" in full) == (toolbox == "full" and target != "none")


def test_prompt_options_are_checked():
    with pytest.raises(UnknownNameError, match="prompt level"):
        system_prompt(5, "none")
    with pytest.raises(UnknownNameError, match="target"):
        system_prompt(1, "pag")
    policy = LLMPolicy(ReplayBackend([]))
    with pytest.raises(UnknownNameError):
        policy.configure(EpisodeSettings(prompt_level=0))


# ---- parsing: actions ------------------------------------------------------------------------

def reply(text: str = "", calls=()) -> ChatReply:
    return ChatReply(text=text, tool_calls=[ToolCall(f"c{k}", name, args)
                                            for k, (name, args) in enumerate(calls)])


@pytest.mark.parametrize("text, expected", [
    ('{"tool": "ci_test", "args": {"x": "X1", "y": "X2"}}',
     {"tool": "ci_test", "args": {"x": "X1", "y": "X2"}}),
    ('Thought.\n```json\n{"tool": "describe_data"}\n```\nDone.', {"tool": "describe_data",
                                                                  "args": {}}),
    ('Call {"name": "add_edge", "arguments": "{\\"x\\": \\"X1\\", \\"y\\": \\"X2\\"}"} now.',
     {"tool": "add_edge", "args": {"x": "X1", "y": "X2"}}),
    ('{"action": "show_graph", "action_input": {}}', {"tool": "show_graph", "args": {}}),
    ('{"tool": "remove_edge", "x": "X1", "y": "X2", "thought": "weak"}',
     {"tool": "remove_edge", "args": {"x": "X1", "y": "X2"}}),
    ("{'tool': 'ci_test', 'args': {'x': 'X1', 'y': 'X2', 'given': []}}",
     {"tool": "ci_test", "args": {"x": "X1", "y": "X2", "given": []}}),
    ("Action: list_graphs\nAction Input: None", {"tool": "list_graphs", "args": {}}),
    ('I run ci_test(x="X1", y="X3", given=["X2"]).', {"tool": "ci_test", "args": {
        "x": "X1", "y": "X3", "given": ["X2"]}}),
])
def test_actions_are_read_from_text(text, expected):
    extracted = extract_action(reply(text), ["ci_test", "describe_data"])
    assert extracted.action == expected and extracted.source != "unparsed"


def test_tool_calls_come_first_and_malformed_arguments_stay_malformed():
    extracted = extract_action(reply('{"tool": "submit"}', [("ci_test", '{"x": "X1"}'),
                                                            ("submit", "{}")]))
    assert extracted.action == {"tool": "ci_test", "args": {"x": "X1"}}
    assert extracted.tool_call_id == "c0" and extracted.ignored_tool_calls == ("c1",)
    broken = extract_action(reply("", [("ci_test", '{"x": "X1", ')])).action
    assert isinstance(broken, str)
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)
    assert extract_action(reply("", [("describe_data", "")])).action == {
        "tool": "describe_data", "args": {}}
    nothing = extract_action(reply("I need to think more."))
    assert nothing.source == "unparsed" and nothing.action == "I need to think more."


def test_think_tags_are_reasoning():
    assert split_reasoning("<think>hmm</think>\nanswer") == ("answer", "hmm")
    assert split_reasoning("<think>cut off mid") == ("", "cut off mid")
    assert split_reasoning("plain") == ("plain", "")


# ---- parsing: edge lists ---------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("X1 -> X2\nX2 - X3", ["X1 --> X2", "X2 --- X3"]),
    ("1. X1 → X2\n2) X3 --- X4", ["X1 --> X2", "X3 --- X4"]),
    ("Final edge list:\n- X1 -> X2\n- X4 <- X5 (strong KCI dependence)",
     ["X1 --> X2", "X5 --> X4"]),
    ('["X1 -> X2", "X3 - X4"]', ["X1 --> X2", "X3 --- X4"]),
    ('Answer: [["X1", "X2"], ["X3", "---", "X4"]]', ["X1 --> X2", "X3 --- X4"]),
    ('[{"from": "X1", "to": "X2"}, {"source": "X3", "target": "X4", "directed": false}]',
     ["X1 --> X2", "X3 --- X4"]),
    ("```\nX1 -> X2 -> X3\n```", ["X1 --> X2", "X2 --> X3"]),
    ("I think X1 - X2 is wrong, so I drop it.\nX3 -> X4", ["X3 --> X4"]),
    ("X1 -> X2, X2 -> X3; X4 — X5 and X1 ⟶ X5", ["X1 --> X2", "X2 --> X3", "X4 --- X5",
                                                 "X1 --> X5"]),
    ("X1 causes X2\nX4 is caused by X3", ["X1 --> X2", "X3 --> X4"]),
    ("x1 -> x2", ["X1 --> X2"]),
    ("X1 o-> X2\nX3 <-> X4\nX5 o-o X1", ["X1 o-> X2", "X3 <-> X4", "X1 o-o X5"]),
    ("X1 -> X2\nX1 -> X2", ["X1 --> X2"]),
    ("X2 --- X1\nX1 - X2", ["X1 --- X2"]),
    ("Checked: given [] the test rejected.\nFinal edges:\nX2 -> X5", ["X2 --> X5"]),
    ("[]", []), ("None", []), ("Final edge list: []", []), ('{"edges": []}', []),
    ("no edges.", []),
])
def test_edge_lists_are_read_tolerantly(text, expected):
    assert parse_edge_list(text, NAMES) == expected


@pytest.mark.parametrize("text, message", [
    ("X1 -> X9", "unknown variable name(s) X9; the variables are X1, X2"),
    ('["X1 -> Smoking"]', "unknown variable name(s) Smoking"),
    ("X1 -> X1", "self-loop"),
    ("X1 -> X2\nX2 -> X1", "two different edges join"),
    ("X1 -> X2\nX1 - X2", "two different edges join"),
    ("I have no idea.", "no edge list found"),
    ('["X1 -> X2", "X1 to X3"]', "cannot read the edge 'X1 to X3'"),
])
def test_bad_edge_lists_are_refused_with_a_message(text, message):
    with pytest.raises(EdgeListError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_edge_list(text, NAMES)


def test_structured_edge_lists_from_tool_calls():
    assert parse_edge_list(["X1 → X2", "X3 -- X4"], NAMES) == ["X1 --> X2", "X3 --- X4"]
    assert parse_edge_list({"edges": []}, NAMES) == []
    with pytest.raises(EdgeListError, match="cannot read the edge 'X1 to X2'"):
        parse_edge_list(["X1 to X2"], NAMES)
    with pytest.raises(EdgeListError, match="cannot read an edge list"):
        parse_edge_list(42, NAMES)  # type: ignore[arg-type]


# ---- fuzzing -----------------------------------------------------------------------------------

ARROW_STYLES = {"-->": ["-->", "->", "→", "—>", "=>", "⟶"], "---": ["---", "--", "-", "—"]}
SEPARATED = st.sampled_from(["\n", "\n- ", ", ", "; "])


@st.composite
def edge_sets(draw):
    """A random graph over NAMES as (u, symbol, v) with unique pairs."""
    pairs = [(i, j) for i in range(5) for j in range(i + 1, 5)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, min_size=1, max_size=10))
    edges = []
    for i, j in chosen:
        kind = draw(st.sampled_from(["-->", "<--", "---"]))
        u, v = NAMES[i], NAMES[j]
        edges.append((v, "-->", u) if kind == "<--" else (u, kind, v))
    return edges


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edges=edge_sets(), data=st.data())
def test_fuzz_rendered_edge_lists_round_trip(edges, data):
    pieces = []
    for u, symbol, v in edges:
        arrow = data.draw(st.sampled_from(ARROW_STYLES[symbol]))
        if symbol == "-->" and data.draw(st.booleans()):
            arrow = {"-->": "<--", "->": "<-", "→": "←", "—>": "<—", "=>": "<=",
                     "⟶": "⟵"}[arrow]
            u, v = v, u
        space = data.draw(st.sampled_from([" ", "", "  "]))
        pieces.append(f"{u}{space}{arrow}{space}{v}")
    style = data.draw(st.sampled_from(["lines", "numbered", "bullets", "inline", "json",
                                       "marker"]))
    if style == "lines":
        text = "\n".join(pieces)
    elif style == "numbered":
        text = "\n".join(f"{k + 1}. {p}" for k, p in enumerate(pieces))
    elif style == "bullets":
        text = "\n".join(f"* {p}" for p in pieces)
    elif style == "inline":
        text = ", ".join(pieces)
    elif style == "json":
        text = json.dumps(pieces, ensure_ascii=data.draw(st.booleans()))
    else:
        text = "I compared the tests.\nFinal edge list:\n" + "\n".join(pieces)
    expected = {f"{u} {s} {v}" if s == "-->" else f"{min(u, v)} --- {max(u, v)}"
                for u, s, v in edges}
    assert set(parse_edge_list(text, NAMES)) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("X12345 -><→—,;[]{}\"'\n.:abcox()=")),
               max_size=120))
def test_fuzz_edge_parser_raises_only_edge_list_errors(text):
    try:
        edges = parse_edge_list(text, NAMES)
    except EdgeListError:
        return
    for edge in edges:
        u, symbol, v = edge.split(" ")
        assert u in NAMES and v in NAMES and u != v
        assert symbol in ("-->", "---", "<->", "o->", "o-o")
    pairs = [frozenset((e.split(" ")[0], e.split(" ")[2])) for e in edges]
    assert len(pairs) == len(set(pairs))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_action_extraction_never_raises(text):
    extracted = extract_action(reply(text), ["ci_test", "submit"])
    assert isinstance(extracted.action, dict | str)
    if isinstance(extracted.action, dict):
        assert isinstance(extracted.action["tool"], str)


PROSE = st.text(alphabet=st.characters(blacklist_characters="{}[]`'\"",
                                       blacklist_categories=("Cs",)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(before=PROSE, after=PROSE, x=st.sampled_from(NAMES), y=st.sampled_from(NAMES),
       fenced=st.booleans())
def test_fuzz_embedded_actions_are_found(before, after, x, y, fenced):
    action = {"tool": "ci_test", "args": {"x": x, "y": y, "given": [], "method": "kci"}}
    blob = json.dumps(action)
    if fenced:
        blob = f"\n```json\n{blob}\n```\n"
    found, count = find_json_action(before + blob + after)
    assert found == action and count == 1
