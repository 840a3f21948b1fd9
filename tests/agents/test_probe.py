"""The name-only probe: its questions and controls, its scoring, and a run against the loopback
chat server through the real OpenAI client, into a report."""

from __future__ import annotations

import json
import math

import pytest

from agents.llm import OpenAIChatBackend
from agents.llm.server import ChatServer, text_reply
from agents.probe import (
    PROBE_HEURISTIC_MODEL,
    ProbeHeuristicModel,
    network_items,
    orientation_accuracy,
    pair_items,
    read_pair_answer,
    run_probe,
    score_network,
)
from heuresis_env import cli
from heuresis_env.generation import bnlearn_structure
from heuresis_env.graphs import Graph
from heuresis_env.metrics import wilson_interval


def test_network_items_and_their_controls():
    items = network_items(seed=0, networks=["cancer", "asia"])
    by = {(i.item, i.arm): i for i in items}
    asia = bnlearn_structure("asia")
    named = by[("asia", "names")]
    assert sorted(named.names) == sorted(asia.names) and named.truth.n_edges() == 8
    assert named.names != asia.names  # the listing order is shuffled
    indexed = by[("asia", "indices")]
    assert indexed.names == tuple(f"V{k}" for k in range(1, 9))
    assert not set(indexed.names) & set(asia.names) and not any(
        n in indexed.prompt for n in asia.names)
    # the same graph under the renaming: degree sequences agree
    assert sorted(indexed.truth.skeleton().sum(0)) == sorted(named.truth.skeleton().sum(0))
    unnamed = [i for i in items if i.arm == "unnamed"]
    assert len(unnamed) == 8 and all(i.names[0] == "X1" for i in unnamed)
    assert network_items(seed=0, networks=["asia"])[0].names == named.names  # seeded
    assert network_items(seed=1, networks=["asia"])[0].names != named.names


def test_pair_items():
    items = pair_items(seed=0)
    named = [p for p in items if p.arm == "names"]
    assert len(named) == 99 and len([p for p in items if p.arm == "indices"]) == 99
    first = named[0]
    assert {first.a, first.b} == {"Altitude", "Temperature"}
    assert first.a_causes_b == (first.a == "Altitude")
    share = sum(p.a_causes_b for p in named) / len(named)
    assert 0.3 < share < 0.7  # presentation order is shuffled, not the database's


def test_scoring():
    truth = Graph.from_edges(["A", "B", "C"], [("A", "B"), ("B", "C")])
    answer = Graph.from_edges(["A", "B", "C"], [("A", "B"), ("C", "B")])
    assert orientation_accuracy(answer, truth) == 0.5
    assert math.isnan(orientation_accuracy(Graph(["A", "B", "C"]), truth))
    item = network_items(seed=0, networks=["cancer"])[0]
    truth_edges = [f"{e.u} --> {e.v}" for e in item.truth.edges()]
    perfect = score_network(item, "Here you go:\n" + "\n".join(truth_edges))
    assert perfect["f1"] == 1.0 and perfect["orientation"] == 1.0
    unreadable = score_network(item, "I cannot tell: Foo --> Bar")
    assert unreadable["f1"] == 0.0 and unreadable["parse_error"]
    assert read_pair_answer("B -> A") is False and read_pair_answer("**A → B**") is True
    assert read_pair_answer("A causes B.") is True and read_pair_answer("unsure") is None
    interval = wilson_interval([1] * 50 + [0] * 50)  # the package's one Wilson interval
    assert interval.low == pytest.approx(0.4038, abs=1e-3)
    assert interval.high == pytest.approx(0.5962, abs=1e-3)


def test_probe_against_the_loopback_server_reads_real_answers():
    """A scripted server answering the truth: the probe parses and scores it as perfect."""
    item = network_items(seed=0, networks=["earthquake"], unnamed=())[0]
    truth = "\n".join(f"{e.u} --> {e.v}" for e in item.truth.edges())
    pair = [p for p in pair_items(seed=0) if p.arm == "names"][0]
    with ChatServer([text_reply(truth), text_reply(f"Answer: {pair.answer}")]) as server:
        backend = OpenAIChatBackend("scripted", base_url=server.url, api_key="local")
        result = run_probe(backend, "scripted", seed=0, arms=["names"],
                           networks=["earthquake"], unnamed_count=0, max_pairs=1)
        backend.close()
        sent = server.requests[0].body["messages"]
    assert sent[0]["role"] == "system" and "Burglary" in sent[1]["content"]
    assert result.networks[0]["f1"] == 1.0 and result.networks[0]["orientation"] == 1.0
    assert result.pairs[0]["correct"] is True


def test_heuristic_probe_command_and_report(tmp_path, capsys):
    out = tmp_path / "probe"
    assert cli.main(["probe", "--backend", "heuristic", "--out", str(out), "--max-pairs",
                     "10"]) == 0
    printed = capsys.readouterr().out
    assert "| alarm (d=37, 46 arcs) |" in printed and "Tübingen pairs (10, direction)" in printed
    document = json.loads((out / "probe.json").read_text())
    assert document["model"] == PROBE_HEURISTIC_MODEL
    assert {r["arm"] for r in document["networks"]} == {"names", "indices", "unnamed"}
    assert len(document["pairs"]) == 20 and all(p["answer"] == "A -> B"
                                                for p in document["pairs"])
    # the stand-in is name-blind: its pair accuracy is the share of pairs shown cause-first
    named = [p for p in document["pairs"] if p["arm"] == "names"]
    assert document["pair_summaries"][0]["correct"] == sum(p["truth"] == "A -> B"
                                                           for p in named)
    run = tmp_path / "run"
    assert cli.main(["evaluate", "--policy", "tests.evaluation.eval_policies:fisher_skeleton",
                     "--family", "bnlearn-cancer", "--count", "1", "--out", str(run),
                     "--no-progress"]) == 0
    assert cli.main(["report", str(run), "--probe", str(out), "--out", str(tmp_path / "rep"),
                     "--no-progress", "--no-traces", "--bootstrap", "100"]) == 0
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "## Name-only probe" in report and "| sachs (d=11, 17 arcs) |" in report
    assert cli.main(["report", str(run), "--probe", str(tmp_path), "--out",
                     str(tmp_path / "rep2"), "--no-progress", "--no-traces"]) == 2


def test_heuristic_model_answers_by_position_only():
    model = ProbeHeuristicModel()
    item = network_items(seed=0, networks=["cancer"], unnamed=())[0]

    class Request:
        messages = [{"role": "user", "content": item.prompt}]

    reply = model(Request())
    assert reply.text.splitlines()[0] == f"{item.names[0]} --> {item.names[1]}"
