"""Chat backends (agents.llm.backends): Anthropic's messages API against the loopback server,
message conversion, the replay backend, retries with back-off and deadlines."""

from __future__ import annotations

import time

import numpy as np
import pytest

from agents.llm.backends import (
    AnthropicBackend,
    BackendError,
    DeadlineExceeded,
    Failure,
    ReplayBackend,
    RetrySchedule,
    anthropic_messages,
    call_with_retries,
)
from agents.llm.policy import LLMPolicy
from agents.llm.server import ChatServer, http_error, text_reply, tool_call
from heuresis_env.errors import HeuresisError
from heuresis_env.policy import EpisodeSettings
from tests.agents.llm.llm_fixtures import FAST_RETRY, edges_of, openai_policy, play


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


def test_call_with_retries_retries_what_is_retryable_and_counts(monkeypatch):
    """The loop is tenacity's: two retryable failures then a reply is (reply, 2 retries, their
    messages) after two waits of the schedule; a non-retryable failure is not retried; an
    exhausted budget says how many attempts it made."""
    import tenacity

    calls = []
    made = []
    real = tenacity.Retrying
    monkeypatch.setattr(tenacity, "Retrying", lambda *a, **k: made.append(k) or real(*a, **k))

    def flaky(timeout):
        calls.append(timeout)
        if len(calls) <= 2:
            raise TimeoutError(f"slow {len(calls)}")
        return "reply"

    def classify(exc):
        if isinstance(exc, TimeoutError):
            return Failure(True, str(exc))
        if isinstance(exc, PermissionError):
            return Failure(False, "HTTP 401", status=401, fatal=True)
        return None

    waits = []
    schedule = RetrySchedule(max_retries=3, base_delay=0.5, max_delay=4.0, jitter=0.0)
    result = call_with_retries(flaky, classify, schedule, np.random.default_rng(0),
                               timeout=9.0, sleep=waits.append)
    assert result == ("reply", 2, ["slow 1", "slow 2"]) and waits == [0.5, 1.0]
    assert made and calls == [9.0, 9.0, 9.0]
    with pytest.raises(BackendError, match="HTTP 401") as refused:
        call_with_retries(lambda t: (_ for _ in ()).throw(PermissionError()), classify,
                          schedule, np.random.default_rng(0), sleep=waits.append)
    assert refused.value.fatal and refused.value.retries == 0
    with pytest.raises(BackendError, match="gave up after 4 attempts; last error: slow") as out:
        call_with_retries(lambda t: (_ for _ in ()).throw(TimeoutError("slow")), classify,
                          schedule, np.random.default_rng(0), sleep=lambda s: None)
    assert out.value.retries == 3 and len(out.value.retry_errors) == 4
