"""``heuresis view``'s site builder: what each episode file holds, checked against the traces,
the results, the transcripts and the regenerated instances."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from heuresis_env.cli import main
from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import evaluate
from heuresis_env.evaluation.run_format import load_run
from heuresis_env.files import json_indented
from heuresis_env.generation.instances import TEST_SALT_ENV, InstanceKey, generate_instance
from heuresis_env.generation.salts import new_salt
from heuresis_env.trace_files import read_trace
from heuresis_env.viewer import build_site
from heuresis_env.viewer.site import INDEX_COLUMNS, _clip, transcript_steps
from tests.viewer.conftest import SETTINGS, D, N
from tests.viewer.viewer_policies import ACTIONS


@pytest.fixture(scope="module")
def site(viewer_runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    return build_site(list(viewer_runs.values()), out)


def index_data(site) -> dict:
    page = site.index_path.read_text()
    blob = re.search(r'<script id="index-data" type="application/json">(.*?)</script>', page,
                     re.S).group(1)
    return json.loads(blob)


def episode(site, file: str) -> dict:
    text = (site.out_dir / "episodes" / f"{file}.js").read_text()
    match = re.fullmatch(r'heuresisEpisode\("([^"]+)",(.*)\);\n', text, re.S)
    assert match and match.group(1) == file
    return json.loads(match.group(2))


def rows(site) -> list[dict]:
    data = index_data(site)
    return [dict(zip(data["columns"], row, strict=True)) for row in data["rows"]]


def test_the_index_lists_every_episode_and_holds_no_trace(site, viewer_runs):
    data = index_data(site)
    assert data["columns"] == list(INDEX_COLUMNS)
    total = sum(len(load_run(p).episodes) for p in viewer_runs.values())
    assert site.n_episodes == len(data["rows"]) == total == 3 * 2 * 2
    assert site.n_traces == total and site.n_truths == total
    files = sorted(p.stem for p in (site.out_dir / "episodes").glob("*.js"))
    assert files == sorted(r["file"] for r in rows(site))
    page = site.index_path.read_text()
    assert "graph_diff" not in page and '"steps":[' not in page  # traces load lazily
    # everything the page needs is in the site: no URL of another host, no CDN
    for path in [site.index_path, *sorted((site.out_dir / "static").iterdir())]:
        text = path.read_text()
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), path
        # (the SVG namespace is a name, not an address)
        assert not re.search(r"https?://", text.replace("http://www.w3.org/2000/svg", "")), path
    assert {"viewer.js", "viewer.css", "LICENSE.txt"} <= {
        p.name for p in (site.out_dir / "static").iterdir()}


def _apply(start, steps):
    graph = {frozenset(e[:2]): e for e in start}
    for step in steps:
        for change in step["diff"]:
            key = frozenset(change["pair"])
            if change["after"] is None:
                graph.pop(key, None)
            else:
                graph[key] = change["after"]
    return graph


def test_an_episode_file_replays_its_trace_and_cites_its_evidence(site, viewer_runs):
    row = next(r for r in rows(site) if r["run"] == 2 and r["id"] == "lg/dev/0/r0")
    payload = episode(site, row["file"])
    run = load_run(viewer_runs["evidence"])
    record = next(e for e in run.episodes if e.episode_id == "lg/dev/0/r0")
    trace = read_trace(record.trace_path)
    assert len(payload["steps"]) == len(trace.steps) == len(ACTIONS)
    for step, recorded in zip(payload["steps"], trace.steps, strict=True):
        assert step["n"] == recorded["step"] and step["tool"] == recorded["tool"]
        assert step.get("evidence") == recorded.get("evidence")
    steps = payload["steps"]
    assert steps[2]["evidence"] == [1] and steps[2]["evidence_source"] == "explicit"
    assert steps[3]["evidence_source"] == "implicit" and steps[3]["evidence"] == [1, 2]
    assert steps[5]["diff"] == [{"pair": ["X2", "X3"], "before": ["X2", "X3", 1, 1],
                                 "after": None}]
    assert steps[6]["tool"] is None and steps[6]["error"] and steps[6]["action"] == ACTIONS[6]
    assert steps[7]["diff"][0]["after"] == ["X3", "X4", 1, 2]  # X3 --> X4
    # the diffs rebuild the final graph the run recorded
    final = {frozenset(e[:2]): e for e in payload["final"]}
    assert _apply(payload["start"], steps) == final
    assert {tuple(e) for e in final.values()} == {("X1", "X2", 1, 2), ("X3", "X4", 1, 2)}
    assert payload["names"] == [f"X{k + 1}" for k in range(D)]
    # no transcript, and still every output: the trace keeps the text behind each edit
    assert all(step["output"] for step in steps)
    assert steps[0]["output"].startswith("X1 _||_ X2") and "p-value" in steps[0]["output"]
    assert steps[2]["evidence"] == [1] and "p-value" in steps[steps[2]["evidence"][0] - 1][
        "output"]
    assert not any("digest" in note for note in payload["notes"])


def test_truth_and_comparison_reproduce_the_recorded_f1(site):
    checked = 0
    for row in rows(site):
        payload = episode(site, row["file"])
        key = InstanceKey(payload["family"], "dev", payload["index"], d=D, n=N)
        dag = generate_instance(key).record.dag
        assert {frozenset(e[:2]) for e in payload["truth"]} == {
            frozenset((e.u, e.v)) for e in dag.edges()}
        c = payload["comparison"]
        correct, missing, extra = len(c["correct"]), len(c["missing"]), len(c["extra"])
        assert correct + missing == len(payload["truth"])
        assert correct + extra == len(payload["final"])
        f1 = 2 * correct / (2 * correct + missing + extra) if correct else 0.0
        assert f1 == pytest.approx(payload["scores"]["f1"])
        checked += 1
    assert checked == 12


def test_delta_is_f1_minus_bca_on_the_same_instance(site):
    table = rows(site)
    bca = {(r["family"], r["index"]): r["f1"] for r in table if r["run"] == 0}
    for r in table:
        if r["run"] == 0:
            assert r["delta"] is None
        else:
            assert r["delta"] == pytest.approx(r["f1"] - bca[(r["family"], r["index"])])


def test_a_language_model_episode_shows_outputs_tokens_and_cost(site, viewer_runs):
    run = load_run(viewer_runs["llm"])
    for record in run.episodes:
        row = next(r for r in rows(site) if r["run"] == 1 and r["id"] == record.episode_id)
        payload = episode(site, row["file"])
        steps = payload["steps"]
        assert all(s.get("output") for s in steps[:-1])  # the last action's output is not read
        assert steps[0]["output"].startswith(f"{steps[0]['args']['name']} (alpha=")
        assert sum(s.get("prompt_tokens", 0) for s in steps) == record.prompt_tokens
        assert sum(s.get("completion_tokens", 0) for s in steps) == record.completion_tokens
        assert payload["cost"] == pytest.approx(record.cost_usd)
        assert all(s.get("reply") for s in steps)


def test_transcript_steps_pairs_actions_with_their_outputs():
    events = [{"event": "episode"},
              {"event": "model_call", "reply": {"usage": {"prompt": 10, "completion": 2},
                                                 "text": "think"}, "cost_usd": 0.5},
              {"event": "action"},
              {"event": "message", "message": {"role": "assistant", "content": "x"}},
              {"event": "message", "message": {"role": "tool", "content": "out 1"}},
              {"event": "model_call", "reply": {"usage": {"prompt": 20, "completion": 3}}},
              {"event": "model_call_failed"},
              {"event": "model_call", "reply": {"usage": {"prompt": 5, "completion": 1}}},
              {"event": "action"},
              {"event": "message", "message": {"role": "user", "content": "Observation:\nout 2"}},
              {"event": "action"}]
    steps, other = transcript_steps(events)
    assert other is None and len(steps) == 3
    assert (steps[0].output, steps[0].prompt_tokens, steps[0].cost, steps[0].reply) == (
        "out 1", 10, 0.5, "think")
    assert (steps[1].output, steps[1].prompt_tokens, steps[1].calls) == ("out 2", 25, 2)
    assert steps[2].output is None and steps[2].calls == 0
    assert transcript_steps([{"kind": "router_decision"}]) == ([], [{"kind": "router_decision"}])


def test_long_outputs_and_ledgers_are_cut_and_say_so():
    text = "x" * 50
    assert _clip(text, 50) == text
    assert _clip(text, 20) == "x" * 20 + "\n… (30 more characters not shown)"
    ledger = {"hypotheses": [{"pair": [f"X{k}", f"X{k + 1}"], "p_value": k / 100,
                              "evidence": list(range(k))} for k in range(200)]}
    whole = json_indented(ledger)
    assert _clip(ledger, len(whole)) == whole  # all of it fits: no note
    shown = _clip(ledger, 1000, whole="transcripts/a.json in the run directory")
    assert shown == whole[:1000] + ("\n… (cut at 1000 characters; the whole of it: "
                                    "transcripts/a.json in the run directory)")


def test_a_sealed_run_shows_its_truth_only_with_the_salt(tmp_path, monkeypatch):
    monkeypatch.delenv(TEST_SALT_ENV, raising=False)
    secret = new_salt()
    run = evaluate("tests.viewer.viewer_policies:EvidencePolicy", families=["lg"],
                   split="test", count=1, settings=SETTINGS, out_dir=tmp_path / "sealed",
                   d=D, n=N, salt=secret, progress=False).out_dir
    without = build_site([run], tmp_path / "a")
    payload = episode(without, rows(without)[0]["file"])
    assert payload["truth"] is None and TEST_SALT_ENV in payload["truth_note"]
    assert any(TEST_SALT_ENV in w for w in without.warnings) and without.n_truths == 0
    monkeypatch.setenv(TEST_SALT_ENV, secret)
    with_salt = build_site([run], tmp_path / "b")
    assert with_salt.n_truths == 1
    assert episode(with_salt, rows(with_salt)[0]["file"])["comparison"]["correct"] is not None
    monkeypatch.setenv(TEST_SALT_ENV, new_salt())
    wrong = build_site([run], tmp_path / "c")
    assert wrong.n_truths == 0 and any("not the salt" in w for w in wrong.warnings)


def test_output_directory_rules_and_hidden_options(viewer_runs, tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(HeuresisError, match="not a Heuresis viewer site"):
        build_site([viewer_runs["bca"]], foreign)
    assert (foreign / "notes.txt").read_text() == "mine"
    copy = tmp_path / "run-with-key"
    shutil.copytree(viewer_runs["bca"], copy)
    config = json.loads((copy / "config.json").read_text())
    config["policy_options"] = {"api_key": "sk-very-secret", "model": "m"}
    (copy / "config.json").write_text(json.dumps(config))
    out = tmp_path / "site"
    first = build_site([viewer_runs["llm"], copy], out)
    assert first.n_episodes == 8
    for path in [first.index_path, *(out / "episodes").iterdir()]:
        assert "sk-very-secret" not in path.read_text()
    second = build_site([copy], out)  # a rebuild replaces the old episode files
    assert len(list((out / "episodes").iterdir())) == second.n_episodes == 4
    with pytest.raises(HeuresisError, match="no config.json"):
        build_site([tmp_path / "foreign"], tmp_path / "x")


def test_the_command_writes_the_site_and_says_where(viewer_runs, tmp_path, capsys):
    out = tmp_path / "cli-site"
    assert main(["view", *map(str, viewer_runs.values()), "--out", str(out),
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"Viewer: {out / 'index.html'} (3 runs, 12 episodes")
    assert main(["view", str(viewer_runs["bca"]), "--out", str(out), "--port", "70000"]) == 2
    assert os.path.isfile(out / "index.html")


def test_a_question_run_shows_its_question_and_no_graph_comparison(tmp_path):
    run = evaluate("agents.qa.scripted:question_tool_policy", families=["lg"], split="dev",
                   count=2, settings=SETTINGS, out_dir=tmp_path / "qa", d=D, n=N,
                   progress=False, task="qa").out_dir
    site = build_site([run], tmp_path / "site")
    records = {e.episode_id: e for e in load_run(run).episodes}
    assert site.n_episodes == 2 and site.n_truths == 2
    for row in rows(site):
        payload = episode(site, row["file"])
        record = records[payload["id"]]
        assert payload["task"] == "qa" and "comparison" not in payload
        assert payload["question"]["kind"] == record.question["kind"]
        assert payload["scores"]["correct"] == record.scores["correct"]
        assert row["f1"] is None


def test_a_build_in_two_processes_writes_the_same_site(viewer_runs, tmp_path):
    runs = [str(path) for path in viewer_runs.values()]
    serial = build_site(runs, tmp_path / "serial")
    assert serial.processes == 1
    # a fresh interpreter: this one may have threads, and then a build does not fork
    code = ("import sys; import heuresis_env.viewer.site as site; "
            "site.PARALLEL_MIN_EPISODES = 1; "
            "summary = site.build_site(sys.argv[2:], sys.argv[1], workers=2); "
            "print(summary.processes, summary.n_episodes, summary.n_truths, "
            "len(summary.warnings))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "parallel"), *runs],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", str(serial.n_episodes), str(serial.n_truths),
                                   str(len(serial.warnings))]
    files = sorted(p.name for p in (tmp_path / "serial" / "episodes").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "parallel" / "episodes").iterdir())
    for name in files:
        assert ((tmp_path / "serial" / "episodes" / name).read_bytes()
                == (tmp_path / "parallel" / "episodes" / name).read_bytes())
    built = re.compile(r'"built":"[^"]*"')
    assert (built.sub("", (tmp_path / "parallel" / "index.html").read_text())
            == built.sub("", serial.index_path.read_text()))
    with pytest.raises(HeuresisError, match="workers must be at least 1"):
        build_site(runs, tmp_path / "none", workers=0)


def test_a_run_made_without_d_shows_the_size_of_its_instances(viewer_runs, tmp_path):
    copy = tmp_path / "no-size"
    shutil.copytree(viewer_runs["bca"], copy)
    config = json.loads((copy / "config.json").read_text())
    config["d"] = config["n"] = None  # as `heuresis evaluate` records a run without --d/--n
    (copy / "config.json").write_text(json.dumps(config))
    site = build_site([copy], tmp_path / "site")
    (run,) = index_data(site)["runs"]
    assert (run["d"], run["n"]) == (D, N)  # from the instances, never "?"


def test_the_index_row_holds_the_tools_and_arguments_for_the_search(site):
    row = next(r for r in rows(site) if r["run"] == 2 and r["id"] == "lg/dev/0/r0")
    words = row["search"].split()
    assert words[:4] == ["ci_test", "X1", "X2", "fisherz"]
    assert {"add_edge", "describe_data", "remove_edge", "submit", "X3"} <= set(words)
    assert len(row["instance"]) == 16
