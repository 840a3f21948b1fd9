"""Heuresis as an inspect_ai task, tested for real: inspect's own eval loop with its
``mockllm/model`` provider and, through its ``openai-api`` provider, the loopback chat server;
the scores equal what ``heuresis evaluate`` gives for the same actions; the log holds no truth;
logs and run directories convert both ways; ``inspect view`` serves them."""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log  # noqa: E402
from inspect_ai.model import (  # noqa: E402
    ChatMessageAssistant,
    ChatMessageTool,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.tool import ToolCall as InspectToolCall  # noqa: E402

from agents.inspect_task import causal_discovery_task, inspect_tools  # noqa: E402
from agents.inspect_task.backend import (  # noqa: E402
    InspectChatBackend,
    chat_reply,
    inspect_messages,
)
from agents.inspect_task.logs import export_run, import_inspect_log  # noqa: E402
from agents.inspect_task.solver import STORE_RECORD, STORE_TRACE  # noqa: E402
from agents.llm.backends import BackendError  # noqa: E402
from agents.llm.heuristic_model import HeuristicModel  # noqa: E402
from agents.llm.server import (  # noqa: E402
    HEURISTIC_MODEL_NAME,
    ChatServer,
    http_error,
    tool_call,
)
from heuresis_env import cli  # noqa: E402
from heuresis_env.env import tool_schemas  # noqa: E402
from heuresis_env.errors import HeuresisError  # noqa: E402
from heuresis_env.evaluation import evaluate, load_run  # noqa: E402
from heuresis_env.generation import InstanceKey, cached_instance, check_salt  # noqa: E402
from heuresis_env.policy import EpisodeSettings  # noqa: E402
from heuresis_env.questions import question_set  # noqa: E402
from heuresis_env.reports import build_report  # noqa: E402
from heuresis_env.viewer import build_site  # noqa: E402
from tests.agents.inspect_helpers import GRAPH_SCRIPT, QUESTION_SCRIPT  # noqa: E402
from tests.viewer.browser import chromium, save_screenshot  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SIZE = {"d": 6, "n": 200}
SETTINGS = EpisodeSettings(max_steps=12, max_seconds=300.0)
TASK_ARGS = {"family": "wild", "split": "dev", "count": 2, "max_steps": 12,
             "max_seconds": 300.0, **SIZE}
SCRIPT_POLICY = "tests.agents.inspect_helpers:script_policy"
RUN = {"families": ["wild"], "split": "dev", "count": 2, "settings": SETTINGS,
       "progress": False, **SIZE}


def mock_model(actions):
    """inspect's ``mockllm/model``, its k-th reply in an episode calling the k-th action's tool
    (usage set, so inspect never counts tokens itself)."""

    def respond(messages, tools, tool_choice, config) -> ModelOutput:
        turn = sum(1 for m in messages if m.role == "assistant")
        action = actions[min(turn, len(actions) - 1)]
        output = ModelOutput.for_tool_call("mockllm/model", action["tool"], action["args"])
        output.usage = ModelUsage(input_tokens=100 + turn, output_tokens=10,
                                  total_tokens=110 + turn)
        return output

    return get_model("mockllm/model", custom_outputs=respond)


def run_eval(task, log_dir: Path, model, **task_args) -> EvalLog:
    logs = inspect_eval(task, task_args=task_args, model=model, log_dir=str(log_dir),
                        display="none")
    assert len(logs) == 1
    log = logs[0]
    assert log.status == "success", log.error
    return read_eval_log(log.location)


def trace_actions(path: Path) -> list:
    return [json.loads(line)["action"] for line in path.read_text().splitlines()
            if json.loads(line)["type"] == "step"]


def sample_score(sample) -> dict:
    (score,) = sample.scores.values()
    return score.value


@pytest.fixture(scope="module")
def mock_log(tmp_path_factory) -> EvalLog:
    """The graph task by its registered name, two instances, BCA_φ on."""
    return run_eval("heuresis/causal_discovery", tmp_path_factory.mktemp("mock-logs"),
                    mock_model(GRAPH_SCRIPT), **TASK_ARGS)


@pytest.fixture(scope="module")
def script_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "script"
    evaluate(SCRIPT_POLICY, out_dir=out, policy_options={"actions": GRAPH_SCRIPT}, **RUN)
    return out


@pytest.fixture(scope="module")
def bca_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "bca"
    evaluate("bca", out_dir=out, **RUN)
    return out


def test_the_commands_are_listed_without_loading_inspect():
    """``heuresis --help`` imports every command's module: the three inspect commands must not
    load inspect_ai (it takes seconds)."""
    code = ("import sys; from heuresis_env.cli import build_parser; "
            "text = build_parser().format_help(); "
            "print(all(c in text for c in ('import-inspect', 'export-inspect', 'inspect-demo')),"
            " 'inspect_ai' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.stdout.split() == ["True", "False"], done.stderr[-2000:]


# ---- the same actions, the same scores ----------------------------------------------------

def test_the_same_actions_score_the_same_through_inspect_and_heuresis_evaluate(
        mock_log, script_run):
    run = {e.episode_id: e for e in load_run(script_run).episodes}
    assert len(mock_log.samples) == 2 == len(run)
    for sample in mock_log.samples:
        record = sample.store[STORE_RECORD]
        episode = run[record["episode_id"]]
        assert record["policy"] == "inspect/mockllm/model"
        assert sample_score(sample)["f1"] == episode.score("f1")  # identical, not close
        for key in ("shd", "shd_cpdag", "n_edges", "recall"):
            assert sample_score(sample)[key] == episode.score(key), key
        assert record["steps"] == episode.steps == len(GRAPH_SCRIPT)
        assert record["termination_reason"] == "submitted" and sample_score(sample)["finished"]
        # the very same actions reached the environment, the refused one included
        trace = [json.loads(line) for line in sample.store[STORE_TRACE].splitlines()]
        assert [s["action"] for s in trace if s["type"] == "step"] == \
            trace_actions(episode.trace_path) == GRAPH_SCRIPT
        assert [s["error"] is not None for s in trace if s["type"] == "step"][3]
        # the conversation is the sample's messages; the tokens are the model's
        assert [m.role for m in sample.messages[:3]] == ["system", "user", "assistant"]
        assert "TASK: recover the causal graph" in sample.messages[1].text
        assert record["tokens"]["prompt"] == sum(100 + k for k in range(len(GRAPH_SCRIPT)))
    mean_f1 = mock_log.results.scores[0].metrics["mean"].value
    assert mock_log.results.scores[0].name == "f1"
    assert mean_f1 == pytest.approx(sum(e.score("f1") for e in run.values()) / 2)


def test_the_residual_gain_is_against_the_bca_policy_of_heuresis_evaluate(mock_log, bca_run):
    bca = {(e.family, e.index): e.score("f1") for e in load_run(bca_run).episodes}
    deltas = []
    for sample in mock_log.samples:
        value = sample_score(sample)
        reference = bca[(sample.metadata["family"], sample.metadata["index"])]
        assert value["f1_bca"] == reference
        assert value["delta_bca"] == value["f1"] - reference
        deltas.append(value["delta_bca"])
        assert "BCA_φ F1" in next(iter(sample.scores.values())).explanation
    delta = next(s for s in mock_log.results.scores if s.name == "delta_bca")
    assert delta.metrics["mean"].value == pytest.approx(sum(deltas) / len(deltas))


# ---- the truth stays on the referee's side ---------------------------------------------------

def _log_text(path: Path) -> str:
    """Every byte of a log: each member of the .eval archive, decompressed."""
    with zipfile.ZipFile(path) as archive:
        return "\n".join(archive.read(name).decode("utf-8") for name in archive.namelist())


def _serializations(edges: list[str], marks: list[list[int]]) -> list[str]:
    return [json.dumps(edges), json.dumps(edges, separators=(",", ":")), "\n".join(edges),
            " ".join(edges), json.dumps(marks), json.dumps(marks, separators=(",", ":"))]


def _salt_with_rich_graphs(family: str, count: int, d: int, n: int) -> str:
    """A fresh random salt whose first ``count`` test instances have ≥ 5 edges each.

    A graph of one or two edges serializes to a string that can occur in a log by chance; the
    checks below are meaningful only for graphs with several edges, so the salt is drawn again
    until every sealed instance has them (about one draw in eight is redrawn at d = 10).
    """
    for _ in range(200):
        salt = secrets.token_hex(16)
        if all(len(list(cached_instance(InstanceKey(family, "test", k, d=d, n=n),
                                        salt).record.dag.edges())) >= 5 for k in range(count)):
            return salt
    raise AssertionError("200 salts in a row gave a sparse test instance")


def test_the_truth_and_the_salt_are_absent_from_every_log_field(tmp_path, monkeypatch):
    salt = _salt_with_rich_graphs("wild", TASK_ARGS["count"], d=10, n=600)
    monkeypatch.setenv("HEURESIS_TEST_SALT", salt)
    # actions that show no algorithm's graph, so no graph in the log can be the truth by chance
    script = [{"tool": "ci_test", "args": {"x": "X1", "y": "X2"}},
              {"tool": "add_edge", "args": {"x": "X1", "y": "X2", "directed": False}},
              {"tool": "submit", "args": {}}]
    log = run_eval("heuresis/causal_discovery", tmp_path / "graph", mock_model(script),
                   **{**TASK_ARGS, "split": "test", "bca": False, "d": 10, "n": 600})
    questions = run_eval("heuresis/qa", tmp_path / "qa", mock_model(QUESTION_SCRIPT),
                         family="lg", split="test", count=9, max_steps=6, **SIZE)
    for found in (log, questions):
        text = _log_text(Path(found.location))
        assert salt not in text
        assert '"truth"' not in text
        assert found.eval.metadata["heuresis"]["salt_digest"]
    text = _log_text(Path(log.location))
    for sample in log.samples:
        assert sample.metadata["instance"]["split"] == "test"
        key = InstanceKey.from_dict(sample.metadata["instance"])
        dag = cached_instance(key, salt).record.dag
        edges = sorted(str(e) for e in dag.edges())
        assert len(edges) >= 5
        for serialized in [*_serializations(edges, dag.marks.tolist()),
                           json.dumps(dag.to_dict()), json.dumps(dag.skeleton().tolist())]:
            assert serialized not in text, f"{sample.id}: the true graph is in the log"
        # the sample's own record still names the instance by its data hash only
        assert sample.store[STORE_RECORD]["instance_sha256"] == \
            cached_instance(key, salt).sha256
    text = _log_text(Path(questions.location))
    asked = question_set("lg", "test", 6, 200, salt=salt)
    kinds = set()
    for sample in questions.samples:
        truth = asked.question(sample.metadata["question"]).truth_dict()
        assert "truth" not in sample.store[STORE_RECORD]["question"]
        if "value" in truth:  # an effect: its value is nowhere
            kinds.add("effect")
            assert repr(truth["value"]) not in text and json.dumps(truth) not in text
        if "adjacent" in truth:  # a graph question: its adjacency matrix is nowhere
            kinds.add("graph")
            for serialized in _serializations([], truth["adjacent"])[4:]:
                assert serialized not in text
    assert kinds == {"effect", "graph"}  # (a yes/no truth is one bit: "correct" tells it)
    # a sealed log is scored again only with its salt
    monkeypatch.delenv("HEURESIS_TEST_SALT")
    with pytest.raises(HeuresisError, match="sealed test split; set .HEURESIS_TEST_SALT"):
        import_inspect_log(log.location, tmp_path / "no-salt")
    monkeypatch.setenv("HEURESIS_TEST_SALT", secrets.token_hex(16))
    with pytest.raises(HeuresisError, match="is not the salt"):
        import_inspect_log(log.location, tmp_path / "other-salt")
    monkeypatch.setenv("HEURESIS_TEST_SALT", salt)
    assert import_inspect_log(log.location, tmp_path / "sealed").imported == 2
    assert load_run(tmp_path / "sealed").config["salt_digest"] == \
        log.eval.metadata["heuresis"]["salt_digest"]


def test_a_weak_test_salt_is_refused_and_a_strong_one_accepted(monkeypatch):
    monkeypatch.setenv("HEURESIS_TEST_SALT", "test-salt")
    with pytest.raises(HeuresisError, match="too weak to seal the test split"):
        causal_discovery_task("wild", "test", 1, SETTINGS, **SIZE)
    causal_discovery_task("wild", "dev", 1, SETTINGS, **SIZE)  # dev: no salt applies
    for weak in ("a" * 64, "0123456789abcdef", "correct horse"):
        with pytest.raises(HeuresisError, match="heuresis salt"):
            check_salt(weak)
    for strong in (secrets.token_hex(16), secrets.token_hex(32)):  # random hexadecimal tokens
        assert check_salt(strong) == strong


# ---- the toolbox as inspect tools, the backend ----------------------------------------------

#: what inspect's schema model drops (the environment enforces these limits anyway)
DROPPED = {"maxItems", "maxProperties", "propertyNames", "exclusiveMinimum",
           "exclusiveMaximum"}


def _kept(schema):
    if isinstance(schema, dict):
        return {k: _kept(v) for k, v in schema.items()
                if k not in DROPPED and not (k == "default" and v is None)}
    if isinstance(schema, list):
        return [_kept(v) for v in schema]
    return schema


@pytest.mark.parametrize("toolbox,guided,task", [("full", True, "graph"), ("minimal", False,
                                                 "graph"), ("code", False, "qa")])
def test_the_registry_schemas_are_the_inspect_tools(toolbox, guided, task):
    schemas = tool_schemas(toolbox, guided, "openai", task)
    tools = inspect_tools(schemas)
    assert [t.name for t in tools] == [s["function"]["name"] for s in schemas]
    for tool, schema in zip(tools, schemas):
        function = schema["function"]
        assert tool.description == function["description"]
        ours = _kept(function["parameters"])
        ours.pop("description", None)  # "A tool without arguments."
        theirs = tool.parameters.model_dump(exclude_none=True)
        if not ours.get("required"):
            theirs.pop("required", None)
        assert theirs == ours, tool.name


def test_messages_and_replies_cross_between_the_policy_and_inspect():
    conversation = [
        {"role": "system", "content": "rules"}, {"role": "user", "content": "task"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ci_test",
                                                          "arguments": '{"x": "X1"'}},
            {"id": "b", "type": "function", "function": {"name": "submit",
                                                          "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "Error: not valid JSON"},
        {"role": "tool", "tool_call_id": "b", "content": "Not run: one action per turn"}]
    messages = inspect_messages(conversation)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert messages[2].tool_calls[0].parse_error and messages[3].function == "ci_test"
    assert messages[4].function == "submit"
    with pytest.raises(HeuresisError, match="role"):
        inspect_messages([{"role": "robot", "content": ""}])
    # a reply whose arguments inspect could not parse reaches the policy as written
    broken = InspectToolCall(id="c", function="ci_test", arguments={},
                             parse_error="Error parsing the following tool call arguments:"
                                         '\n\n{"x": "X1",\n\nError details: Expecting ...')
    output = ModelOutput(model="m", choices=[])
    output.choices = ModelOutput.from_message(ChatMessageAssistant(
        content="<think>hmm</think>Testing.", tool_calls=[broken])).choices
    reply = chat_reply(output)
    assert reply.tool_calls[0].arguments == '{"x": "X1",' and reply.text == "Testing."
    assert reply.reasoning == "hmm"
    again = inspect_messages([{"role": "user", "content": "x"}, reply.assistant_message(),
                              {"role": "tool", "tool_call_id": "c", "content": "r"}])
    assert isinstance(again[1], ChatMessageAssistant) and again[1].tool_calls == [broken]
    assert isinstance(again[2], ChatMessageTool)
    with pytest.raises(HeuresisError, match="Model"):
        InspectChatBackend("openai/gpt-4o")
    with pytest.raises(BackendError, match="no reply"):
        chat_reply(ModelOutput(model="m", choices=[]))


def test_a_malformed_call_costs_a_step_and_a_refused_key_aborts_through_openai_api(tmp_path):
    """Through inspect's openai-api provider against the loopback server: malformed JSON is
    refused by the environment (a step), and a 401 ends the episode with the error recorded."""
    script = [tool_call("ci_test", '{"x": "X1", '), tool_call("submit", {"edges": []})]
    with ChatServer(script, model="scripted") as server:
        model = get_model("openai-api/loopback/scripted", base_url=server.url, api_key="k")
        log = run_eval("heuresis/causal_discovery", tmp_path / "a", model,
                       **{**TASK_ARGS, "count": 1, "bca": False, "token_budget": 321})
        bodies = [request.body for request in server.requests]
    assert [body["max_tokens"] for body in bodies] == [321, 321]  # the per-turn budget
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == \
        [s["function"]["name"] for s in tool_schemas("full", False, "openai", "graph")]
    record = log.samples[0].store[STORE_RECORD]
    steps = [json.loads(line) for line in log.samples[0].store[STORE_TRACE].splitlines()
             if json.loads(line)["type"] == "step"]
    assert record["steps"] == 2 and record["termination_reason"] == "submitted"
    assert "not valid JSON" in steps[0]["error"]
    with ChatServer([http_error(401, "bad key")], model="scripted") as server:
        model = get_model("openai-api/loopback/scripted", base_url=server.url, api_key="k")
        log = run_eval("heuresis/causal_discovery", tmp_path / "b", model,
                       **{**TASK_ARGS, "count": 1, "bca": False})
    record = log.samples[0].store[STORE_RECORD]
    assert record["termination_reason"] == "aborted" and "401" in record["error"]
    assert math.isfinite(sample_score(log.samples[0])["f1"])  # the working graph, scored


# ---- questions ------------------------------------------------------------------------------

def test_the_question_task_scores_as_heuresis_evaluate_and_imports_with_its_truth(tmp_path):
    log = run_eval("heuresis/qa", tmp_path / "logs", mock_model(QUESTION_SCRIPT),
                   family="lg", split="dev", count=6, max_steps=6, max_seconds=300.0, **SIZE)
    out = tmp_path / "script-qa"
    evaluate(SCRIPT_POLICY, families=["lg"], split="dev", count=6, task="qa",
             settings=EpisodeSettings(max_steps=6, max_seconds=300.0), out_dir=out,
             policy_options={"actions": QUESTION_SCRIPT}, progress=False, **SIZE)
    run = {e.episode_id: e for e in load_run(out).episodes}
    for sample in log.samples:
        record = sample.store[STORE_RECORD]
        episode = run[record["episode_id"]]
        assert sample_score(sample)["correct"] == episode.score("correct")
        assert record["question"]["answer"] == episode.question["answer"] == "yes"
        assert "truth" not in record["question"]
    assert next(s for s in log.results.scores if s.name == "correct").metrics[
        "mean"].value == pytest.approx(sum(e.score("correct") for e in run.values()) / 6)
    imported = tmp_path / "imported-qa"
    summary = import_inspect_log(log.location, imported)
    assert summary.imported == 6 and not summary.skipped and not summary.corrected
    back = {e.episode_id: e for e in load_run(imported).episodes}
    for name, episode in run.items():
        assert back[name].question["truth"] == episode.question["truth"]
        assert back[name].scores == episode.scores
    config = json.loads((imported / "config.json").read_text())
    assert config["questions"] == json.loads((out / "config.json").read_text())["questions"]
    build_report([imported, out], tmp_path / "report", trace_analysis=False,
                 n_resamples=200)


# ---- logs to run directories and back ---------------------------------------------------------

def test_import_inspect_writes_a_run_that_report_and_viewer_show_beside_others(
        mock_log, script_run, bca_run, tmp_path):
    out = tmp_path / "inspect-run"
    assert cli.main(["import-inspect", mock_log.location, "--out", str(out)]) == 0
    imported = load_run(out)
    assert imported.policy == "inspect/mockllm/model" and not imported.warnings
    assert imported.settings == load_run(script_run).settings
    assert imported.config["policy_isolation"] == "inspect"
    assert imported.config["inspect"]["model"] == "mockllm/model"
    scripted = {e.episode_id: e for e in load_run(script_run).episodes}
    for episode in imported.episodes:
        assert episode.scores == scripted[episode.episode_id].scores
        assert trace_actions(episode.trace_path) == GRAPH_SCRIPT
        assert episode.transcript and (out / episode.transcript).is_file()
        assert episode.prompt_tokens and episode.finished
    # importing again resumes: nothing new
    again = import_inspect_log(mock_log.location, out)
    assert again.imported == 0 and again.already == 2
    report = build_report([out, script_run, bca_run], tmp_path / "report",
                          trace_analysis=False, n_resamples=200)
    text = report.markdown_path.read_text()
    assert "inspect/mockllm/model" in text and "script" in text
    site = build_site([out, script_run, bca_run], tmp_path / "site")
    assert site.n_episodes == 6 and site.n_traces == 6


def test_import_scores_again_and_refuses_what_is_not_a_heuresis_log(mock_log, tmp_path):
    log = read_eval_log(mock_log.location)
    first, second = log.samples
    true_f1 = sample_score(first)["f1"]
    first.scores = {name: score.model_copy(update={"value": {**score.value, "f1": 1.0}})
                    for name, score in first.scores.items()}
    first.store[STORE_RECORD]["scores"]["f1"] = 1.0
    final = second.store[STORE_RECORD]["final_graph"]
    final["names"] = [f"V{i}" for i in range(len(final["names"]))]
    forged = tmp_path / "forged.eval"
    write_eval_log(log, str(forged))
    summary = import_inspect_log(forged, tmp_path / "run")
    assert summary.imported == 1 and len(summary.skipped) == 1
    assert "variables" in summary.skipped[0] and "1.0000 is the referee's" in \
        summary.corrected[0]
    (episode,) = load_run(tmp_path / "run").episodes
    assert episode.score("f1") == true_f1
    other = tmp_path / "other.eval"
    log.eval.metadata = {}
    write_eval_log(log, str(other))
    with pytest.raises(HeuresisError, match="not of a Heuresis task"):
        import_inspect_log(other, tmp_path / "run2")
    (tmp_path / "junk.eval").write_text("not a log")
    assert cli.main(["import-inspect", str(tmp_path / "junk.eval"), "--out",
                     str(tmp_path / "run3")]) == 2


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _log_url(port: int, name: str) -> str:
    """inspect view's API address of a log it listed (by the full name it lists)."""
    return f"http://127.0.0.1:{port}/api/logs/{urllib.parse.quote(name, safe='')}"


def _get(url: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return json.loads(response.read())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_a_run_exports_to_a_log_that_inspect_view_serves(script_run, tmp_path):
    path = tmp_path / "logs" / "script.eval"
    assert cli.main(["export-inspect", str(script_run), "--out", str(path)]) == 0
    log = read_eval_log(str(path))
    run = {e.episode_id: e for e in load_run(script_run).episodes}
    assert log.eval.task == "heuresis/causal_discovery" and len(log.samples) == 2
    for sample in log.samples:
        record = sample.store[STORE_RECORD]
        assert sample_score(sample)["f1"] == run[record["episode_id"]].score("f1")
        calls = [m for m in sample.messages if isinstance(m, ChatMessageAssistant)]
        assert [c.tool_calls[0].function for c in calls] == [a["tool"] for a in GRAPH_SCRIPT]
    back = tmp_path / "back"
    assert import_inspect_log(path, back).imported == 2
    assert load_run(back).policy == "tests.agents.inspect_helpers:script_policy"
    assert {e.episode_id: e.scores for e in load_run(back).episodes} == \
        {k: e.scores for k, e in run.items()}
    with pytest.raises(HeuresisError, match=".eval or .json"):
        export_run(script_run, tmp_path / "script.txt")
    port = _free_port()
    viewer = subprocess.Popen(
        [sys.executable, "-m", "inspect_ai", "view", "start", "--log-dir", str(path.parent),
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        files = _get(f"http://127.0.0.1:{port}/api/log-files")["files"]
        assert [Path(f["name"]).name for f in files] == ["script.eval"]
        served = _get(_log_url(port, files[0]["name"]))
        assert served["eval"]["task"] == "heuresis/causal_discovery"
        assert len(served["samples"]) == 2
        with chromium() as browser:  # what a person sees: the samples, one episode's calls
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            page.get_by_text("wild_dev_0").first.wait_for(timeout=60_000)
            assert "heuresis/causal_discovery" in page.inner_text("body")
            page.get_by_text("wild_dev_0").first.click()
            page.get_by_text("Messages", exact=True).first.click()
            page.get_by_text("run_algorithm").first.wait_for(timeout=60_000)
            save_screenshot(page, "inspect-view-export.png", tmp_path)
    finally:
        os.killpg(viewer.pid, signal.SIGTERM)
        viewer.wait(timeout=30)


def test_epochs_are_repeats(tmp_path):
    log = run_eval("heuresis/causal_discovery", tmp_path / "logs", mock_model(GRAPH_SCRIPT),
                   **{**TASK_ARGS, "count": 1, "bca": False, "epochs": 2})
    records = sorted(s.store[STORE_RECORD]["episode_id"] for s in log.samples)
    assert records == ["wild/dev/0/r0", "wild/dev/0/r1"]
    summary = import_inspect_log(log.location, tmp_path / "run")
    run = load_run(tmp_path / "run")
    assert summary.imported == 2 and run.repeats == 2 and not run.warnings
    assert len({e.score("f1") for e in run.episodes}) == 1  # the same script, the same graph
    # another log of the same model and settings (a retry, say) goes into the same run
    retry = run_eval("heuresis/causal_discovery", tmp_path / "logs", mock_model(GRAPH_SCRIPT),
                     **{**TASK_ARGS, "count": 1, "bca": False, "epochs": 2})
    assert retry.eval.eval_id != log.eval.eval_id
    again = import_inspect_log(retry.location, tmp_path / "run")
    assert again.imported == 0 and again.already == 2


# ---- the loopback server through inspect's command line --------------------------------------

@pytest.mark.slow
def test_inspect_eval_against_the_loopback_server_plays_as_heuresis_evaluate(tmp_path):
    """``inspect eval heuresis/causal_discovery`` (the real command, the entry point, the
    openai-api provider) against the heuristic model on a loopback server takes the actions
    ``heuresis evaluate --policy llm-heuristic`` takes, with identical F1."""
    with ChatServer(responder=HeuristicModel(), model=HEURISTIC_MODEL_NAME) as server:
        env = {**os.environ, "LOOPBACK_BASE_URL": server.url, "LOOPBACK_API_KEY": "local"}
        task_args = [a for k, v in {**TASK_ARGS, "bca": False}.items()
                     for a in ("-T", f"{k}={v}")]
        done = subprocess.run(
            [sys.executable, "-m", "inspect_ai", "eval", "heuresis/causal_discovery",
             *task_args, "--model", f"openai-api/loopback/{HEURISTIC_MODEL_NAME}",
             "--log-dir", str(tmp_path / "logs"), "--display", "plain"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    out = tmp_path / "llm-heuristic"
    evaluate("llm-heuristic", out_dir=out, **RUN)
    run = {e.episode_id: e for e in load_run(out).episodes}
    for sample in log.samples:
        record = sample.store[STORE_RECORD]
        episode = run[record["episode_id"]]
        assert sample_score(sample)["f1"] == episode.score("f1")
        steps = [json.loads(line) for line in sample.store[STORE_TRACE].splitlines()]
        assert [s["action"] for s in steps if s["type"] == "step"] == \
            trace_actions(episode.trace_path)
        assert record["steps"] == episode.steps >= 3


@pytest.mark.slow
def test_one_command_runs_the_loopback_eval_and_opens_inspect_view(tmp_path):
    """``heuresis inspect-demo``: two instances against the loopback server, then inspect
    view serving the log. The URL is printed only once the viewer answers it, and a SIGTERM
    to the command (its child not signalled) ends the viewer too: the port is free again
    (issue 42)."""
    import threading

    port = _free_port()
    demo = subprocess.Popen(
        [sys.executable, "-m", "heuresis_env.cli", "inspect-demo", "--log-dir",
         str(tmp_path / "logs"), "--port", str(port), "--max-steps", "15", "--no-bca"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    lines: list[str] = []
    printed = threading.Event()
    answered_when_printed: list[bool] = []

    def read() -> None:
        for line in demo.stdout:
            lines.append(line)
            if line.startswith("inspect view: http://") and not printed.is_set():
                try:  # the viewer must answer at the moment its URL is printed
                    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                        f"http://127.0.0.1:{port}/", timeout=5).close()
                    answered_when_printed.append(True)
                except urllib.error.HTTPError:
                    answered_when_printed.append(True)
                except OSError:
                    answered_when_printed.append(False)
                printed.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert printed.wait(900), "".join(lines)
        assert answered_when_printed == [True]
        files = _get(f"http://127.0.0.1:{port}/api/log-files", timeout=60)["files"]
        names = [f["name"] for f in files]
        assert len(names) == 1
        served = _get(_log_url(port, names[0]))
        assert served["eval"]["task"] == "heuresis/causal_discovery"
        assert served["eval"]["model"] == f"openai-api/loopback/{HEURISTIC_MODEL_NAME}"
        assert len(served["samples"]) == 2 and served["status"] == "success"
        os.kill(demo.pid, signal.SIGTERM)  # the command only, as a service manager would
        demo.wait(timeout=60)
        deadline = time.monotonic() + 30
        while True:  # the viewer ended with it: nothing holds the port any more
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                break
            assert time.monotonic() < deadline, "inspect view outlived heuresis inspect-demo"
            time.sleep(0.5)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(demo.pid, signal.SIGKILL)
        demo.wait(timeout=60)
        reader.join(timeout=10)
    output = "".join(lines)
    assert "log: " in output and "starting inspect view on port" in output
    assert output.index("starting inspect view") < output.index("inspect view: http://")
