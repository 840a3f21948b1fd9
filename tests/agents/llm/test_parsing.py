"""Reading replies (agents.llm.parsing): actions from tool calls and text, reasoning tags,
tolerant and strict edge lists, and fuzzing."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.llm.messages import ChatReply, ToolCall
from agents.llm.parsing import (
    EdgeListError,
    extract_action,
    find_json_action,
    parse_edge_list,
    split_reasoning,
)
from tests.agents.llm.llm_fixtures import NAMES


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
