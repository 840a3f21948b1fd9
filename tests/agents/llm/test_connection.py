"""Which service, key and base URL (agents.llm.connection): one rule, applied alike by the
factory and both SDK backends, and one error naming the variables to set."""

from __future__ import annotations

import pytest

from agents.llm.backends import AnthropicBackend, OpenAIChatBackend
from agents.llm.connection import NO_KEY, Connection, resolve_connection
from heuresis_env.errors import HeuresisError, UnknownNameError

VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HEURESIS_LLM_BASE_URL",
             "HEURESIS_LLM_BACKEND", "HEURESIS_LLM_MODEL", "OPENAI_BASE_URL",
             "ANTHROPIC_BASE_URL")
LOCAL = "http://127.0.0.1:9/v1"


@pytest.fixture
def clean(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_nothing_configured_is_one_error_naming_the_variables(clean):
    for attempt in (resolve_connection, lambda: resolve_connection("openai"),
                    lambda: resolve_connection("anthropic"),
                    lambda: OpenAIChatBackend("gpt-4o"), lambda: AnthropicBackend("claude")):
        with pytest.raises(HeuresisError) as caught:
            attempt()
        for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HEURESIS_LLM_BASE_URL"):
            assert variable in str(caught.value)
    with pytest.raises(UnknownNameError, match="heuristic"):
        resolve_connection("gemini")


def test_the_backend_follows_what_is_configured(clean):
    assert resolve_connection("heuristic") == Connection("heuristic", None, None)
    assert resolve_connection(base_url=LOCAL) == Connection("openai", NO_KEY, LOCAL)
    assert resolve_connection(api_key="k") == Connection("openai", "k", None)
    clean.setenv("ANTHROPIC_API_KEY", "a-key")
    assert resolve_connection() == Connection("anthropic", "a-key", None)
    clean.setenv("OPENAI_API_KEY", "o-key")
    assert resolve_connection() == Connection("openai", "o-key", None)  # OpenAI's key first
    clean.setenv("HEURESIS_LLM_BACKEND", "anthropic")
    assert resolve_connection() == Connection("anthropic", "a-key", None)
    assert resolve_connection("openai", api_key="mine") == Connection("openai", "mine", None)


def test_base_urls_come_from_the_argument_then_ours_then_the_services(clean):
    clean.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8/")
    assert resolve_connection("anthropic") == Connection(
        "anthropic", NO_KEY, "http://127.0.0.1:8/")
    clean.setenv("HEURESIS_LLM_BASE_URL", LOCAL)
    assert resolve_connection("anthropic").base_url == LOCAL
    assert resolve_connection("anthropic", base_url="http://x/").base_url == "http://x/"


def test_the_backends_resolve_alike(clean):
    clean.setenv("HEURESIS_LLM_BASE_URL", LOCAL)
    backend = OpenAIChatBackend("llama3.1:8b")
    assert backend.base_url == LOCAL and backend.max_tokens_parameter == "max_tokens"
    assert backend.client.api_key == NO_KEY
    backend.close()
    clean.delenv("HEURESIS_LLM_BASE_URL")
    clean.setenv("ANTHROPIC_API_KEY", "a-key")
    backend = AnthropicBackend("claude-haiku-4-5")
    assert backend.base_url is None and backend.client.api_key == "a-key"
    backend.close()
