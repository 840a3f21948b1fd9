"""The tool registry, the action parser, and every tool on every family.

Science checks use known answers: back-door paths against brute-force path enumeration,
back-door OLS against a known linear effect, CI-test results against the tests themselves,
stability against a strong chain.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import get_args

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import heuresis_env.env.toolbox as toolbox
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.env.rl_view import rl_action_table
from heuresis_env.env.toolbox.effect_tools import EffectArgs
from heuresis_env.env.toolbox.graph_tools import backdoor_path
from heuresis_env.env.toolbox.reference import render_reference
from heuresis_env.env.toolbox.registry import (
    ActionError,
    NoArgs,
    Tool,
    ToolResult,
    parse_action,
    register_tool,
    tool_schemas,
)
from heuresis_env.env.toolbox.state import EpisodeState
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import EvidenceProvider
from heuresis_env.files import json_safe
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.graphs import EdgeMark, Graph
from heuresis_env.registration import REGISTERED_FAMILIES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "toolbox.md"


def make_state(family: str = "lg", guided: bool = False, target: str = "none",
               toolbox_name: str = "full", d: int = 5, n: int = 200) -> EpisodeState:
    instance = generate_instance(InstanceKey(family, "dev", 0, d=d, n=n))
    evidence = EvidenceProvider(instance.X, instance.names, instance.sha256)
    return EpisodeState(instance.X, instance.names, instance.sha256, guided=guided,
                        target=target, toolbox=toolbox_name, evidence=evidence)


def state_from_data(data: np.ndarray, target: str = "none") -> EpisodeState:
    names = [f"X{i + 1}" for i in range(data.shape[1])]
    from heuresis_env.discovery.citests.base import data_sha256

    return EpisodeState(data, names, data_sha256(data), target=target)


def call(state: EpisodeState, action: dict, check: bool = True) -> ToolResult:
    """Parse and run one action as the environment does; with ``check`` an error result
    raises (the environment would turn it into an error observation)."""
    state.call_number += 1
    parsed = parse_action(action, state.toolbox, state.guided)
    result = parsed.tool.run(state, parsed.args)
    if check and result.error is not None:
        raise HeuresisError(result.error)
    return result


# ---- the registry -------------------------------------------------------------------------------

def test_every_tool_has_a_schema_and_a_category():
    for style in ("openai", "anthropic"):
        schemas = tool_schemas("full", True, style, experiments=True)
        question_schemas = tool_schemas("full", True, style, task="qa")
        names = {(s["function"] if style == "openai" else s)["name"]
                 for s in schemas + question_schemas}
        assert names == set(toolbox.TOOLS)
        for schema in schemas + question_schemas:
            body = schema["function"] if style == "openai" else schema
            parameters = body["parameters"] if style == "openai" else body["input_schema"]
            assert parameters["type"] == "object"
            assert parameters.get("additionalProperties") is False
            assert body["description"]
            json.dumps(schema)  # strictly serializable


def test_toolbox_levels_follow_the_spec():
    full = {t.name for t in toolbox.available_tools("full", False)}
    minimal = {t.name for t in toolbox.available_tools("minimal", False)}
    guided = {t.name for t in toolbox.available_tools("full", True)}
    # the evidence grid (issue 34) is no minimal tool: it runs PC-KCI and three searches;
    # nor are the directed model's inputs (issue 41): the pair statistics and a row sample
    assert full - minimal == {"run_code", "stability", "orientation_probe", "evidence_grid",
                              "pair_statistics", "sample_rows"}
    # the guided condition adds the deletion log and (full toolbox) the repair table of
    # PC-KCI's output (issue 12: the table the RL view's observation layout 2 carries)
    assert guided - full == {"deletion_log", "repair_evidence"}
    guided_minimal = {t.name for t in toolbox.available_tools("minimal", True)}
    assert guided_minimal - minimal == {"deletion_log"}
    # an experiment budget (issue 44) adds intervene to the full and minimal toolboxes only
    for box in ("full", "minimal", "code"):
        with_experiments = {t.name for t in toolbox.available_tools(box, False, experiments=True)}
        without = {t.name for t in toolbox.available_tools(box, False)}
        assert with_experiments - without == ({"intervene"} if box != "code" else set())
    spec_tools = {"describe_data", "ci_test", "run_algorithm", "stability", "orientation_probe",
                  "run_code", "deletion_log", "add_edge", "remove_edge", "orient_edge",
                  "reverse_edge", "set_graph", "submit", "save_graph", "load_graph",
                  "list_graphs", "direct_cause", "collider", "confounder", "estimate_effect"}
    assert spec_tools <= guided


def test_register_tool_refuses_a_duplicate_name():
    tool = Tool("describe_data", "x", NoArgs, lambda s, a: ToolResult("x"), "data")
    with pytest.raises(HeuresisError, match="already registered"):
        register_tool(tool)
    with pytest.raises(HeuresisError):
        Tool("bad name", "x", NoArgs, lambda s, a: ToolResult("x"), "data")


def test_rl_action_table_is_derived_from_the_registry():
    for d in (2, 5, 10):
        table = rl_action_table(d)
        p = d * (d - 1) // 2
        assert len(table) == 5 * p + 1
        assert [a.index for a in table] == list(range(len(table)))
        operations = [a.operation for a in table]
        assert operations == sorted(operations, key=toolbox.RL_OPERATIONS.index)
        providers = {a.operation: a.tool for a in table}
        assert providers == {"add": "add_edge", "remove": "remove_edge", "orient": "orient_edge",
                             "test": "ci_test", "submit": "submit"}
        orient = [(a.i, a.j) for a in table if a.operation == "orient"]
        assert sorted(orient) == [(i, j) for i in range(d) for j in range(d) if i != j]
    without_submit = [t for t in toolbox.TOOLS.values() if t.name != "submit"]
    with pytest.raises(HeuresisError, match="submit"):
        rl_action_table(5, without_submit)


def test_docs_toolbox_page_is_not_stale():
    expected = render_reference()
    assert DOCS.exists(), "run: python -m heuresis_env.env.toolbox.reference > docs/toolbox.md"
    assert DOCS.read_text(encoding="utf-8") == expected, (
        "docs/toolbox.md is stale; regenerate it with "
        "python -m heuresis_env.env.toolbox.reference > docs/toolbox.md")


def test_tools_command_prints_the_reference_and_the_schemas(capsys):
    import argparse

    from heuresis_env.cli import tools as tools_cli

    parser = argparse.ArgumentParser()
    tools_cli.add_arguments(parser)
    assert tools_cli.run(parser.parse_args([])) == 0
    assert capsys.readouterr().out == render_reference()
    assert tools_cli.run(parser.parse_args(["--schemas", "anthropic", "--toolbox",
                                            "minimal"])) == 0
    schemas = json.loads(capsys.readouterr().out)
    assert {s["name"] for s in schemas} == {t.name for t in
                                            toolbox.available_tools("minimal", False)}


# ---- the action parser ------------------------------------------------------------------------------

@pytest.mark.parametrize("action, message", [
    ("not json", "not valid JSON"),
    ("", "empty"),
    ("[1, 2]", "JSON object"),
    ('{"args": {}}', "string 'tool'"),
    ('{"tool": "ci_tset", "args": {}}', "Did you mean 'ci_test'"),
    ('{"tool": "ci_test", "args": {"x": "X1"}}', "y: Field required"),
    ('{"tool": "ci_test", "args": {"x": "X1", "y": "X2", "z": 1}}', "unexpected argument"),
    ('{"tool": "ci_test", "args": [1]}', "'args' must be a JSON object"),
    ('{"tool": "submit", "args": {}, "extra": 1}', "unexpected key"),
    ('{"tool": "deletion_log"}', "guided condition"),
    ("x" * 20_000, "limit is 16384"),
    ({"tool": "set_graph", "args": {"edges": ["X1 --> X2"] * 5000}}, "limit is 16384"),
    (42, "JSON string or a dict"),
    ({"tool": "ci_test", "args": {"x": object(), "y": "X2"}}, "JSON values"),
])
def test_malformed_actions_raise_action_error(action, message):
    with pytest.raises(ActionError, match=message):
        parse_action(action, "full", False)


def test_unknown_tool_lists_the_offered_tools():
    with pytest.raises(ActionError) as info:
        parse_action({"tool": "teleport"}, "minimal", False)
    text = str(info.value)
    assert "ci_test" in text and "submit" in text
    assert "run_code" not in text  # not offered in the minimal toolbox


def test_parser_accepts_numpy_values_a_fenced_block_and_a_single_name():
    parsed = parse_action({"tool": "stability", "args": {"n_boot": np.int64(3)}})
    assert parsed.args.n_boot == 3
    parsed = parse_action('```json\n{"tool": "ci_test", "args": {"x": "X1", "y": "X2", '
                          '"given": "X3"}}\n```')
    assert parsed.args.given == ["X3"]
    assert parsed.arguments["method"] == "fisherz"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool=st.sampled_from(sorted(toolbox.TOOLS)) | st.text(max_size=12),
       args=st.dictionaries(st.sampled_from(["x", "y", "given", "method", "name", "edges",
                                             "params", "n_boot", "code", "evidence"])
                            | st.text(max_size=6), json_values, max_size=4),
       as_text=st.booleans())
def test_fuzzed_actions_parse_or_raise_action_error(tool, args, as_text):
    action = {"tool": tool, "args": args}
    if as_text:
        action = json.dumps(action)
    try:
        parsed = parse_action(action, "full", False)
    except ActionError:
        return
    assert parsed.tool.name == tool
    json.dumps(parsed.arguments)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_fuzzed_text_parses_or_raises_action_error(text):
    try:
        parse_action(text)
    except ActionError:
        pass


# ---- every tool on every family ---------------------------------------------------------------------

def _tool_actions(names: tuple[str, ...]) -> list[dict]:
    x, y, z = names[0], names[1], names[2]
    return [
        {"tool": "describe_data"},
        {"tool": "ci_test", "args": {"x": x, "y": y, "given": [z], "method": "fisherz"}},
        {"tool": "ci_test", "args": {"x": x, "y": y, "method": "kci"}},
        {"tool": "run_algorithm", "args": {"name": "pc-fisherz", "save_as": "pc"}},
        {"tool": "run_algorithm", "args": {"name": "pc-fisherz", "variables": [x, y, z]}},
        {"tool": "stability", "args": {"n_boot": 3}},
        {"tool": "orientation_probe", "args": {"x": x, "y": y}},
        {"tool": "deletion_log"},
        {"tool": "repair_evidence", "args": {"which": "deleted"}},
        {"tool": "evidence_grid"},
        {"tool": "pair_statistics"},
        {"tool": "sample_rows", "args": {"count": 7, "seed": 3}},
        {"tool": "show_graph"},
        {"tool": "add_edge", "args": {"x": x, "y": y}},
        {"tool": "add_edge", "args": {"x": y, "y": z, "directed": False}},
        {"tool": "orient_edge", "args": {"x": z, "y": y}},
        {"tool": "reverse_edge", "args": {"x": x, "y": y}},
        {"tool": "remove_edge", "args": {"x": x, "y": y, "evidence": [1, 2]}},
        {"tool": "save_graph", "args": {"name": "mine"}},
        {"tool": "list_graphs"},
        {"tool": "direct_cause", "args": {"x": z, "y": y}},
        {"tool": "collider", "args": {"x": x, "y": y, "graph": "pc"}},
        {"tool": "confounder", "args": {"x": x, "y": y, "graph": "pc"}},
        {"tool": "estimate_effect", "args": {"treatment": x, "outcome": y}},
        {"tool": "set_graph", "args": {"edges": [f"{x} --> {y}", f"{y} --- {z}"]}},
        {"tool": "load_graph", "args": {"name": "pc"}},
        {"tool": "submit"},
    ]


@pytest.mark.parametrize("family", REGISTERED_FAMILIES)
def test_every_tool_runs_on_every_family(family):
    state = make_state(family, guided=True)
    used = set()
    for action in _tool_actions(state.names):
        result = call(state, action)
        assert result.error is None, (action, result.error)
        assert result.text and isinstance(result.data, dict)
        json.dumps(json_safe(result.data))
        used.add(action["tool"])
    assert result.submitted
    assert state.working_graph == state.memory["pc"]
    offered = {t.name for t in toolbox.available_tools("full", True)}
    assert offered - used == {"run_code"}  # run_code: tested once below (one process per call)


def test_run_code_runs_in_the_sandbox_or_says_it_is_unavailable():
    state = make_state("lg")
    result = call(state, {"tool": "run_code", "args": {"code": "print(X.shape[1], names[0])"}},
                  check=False)
    try:
        if result.error is None:
            assert "5 X1" in result.text
            assert result.data["status"] == "ok"
        else:
            assert "unavailable" in result.error
    finally:
        from heuresis_env.env.toolbox.code_tool import close_sandbox

        close_sandbox(state)


# ---- science of single tools ---------------------------------------------------------------------

def test_ci_test_reports_the_tests_own_result():
    state = make_state("anm")
    for method, given_set in (("fisherz", []), ("fisherz", ["X3", "X4"]), ("kci", ["X5"])):
        result = call(state, {"tool": "ci_test", "args": {"x": "X1", "y": "X2",
                                                          "given": given_set, "method": method}})
        direct = make_ci_test(method, state.data).test(0, 1, [state.variable(v)
                                                              for v in given_set])
        assert result.data["p_value"] == pytest.approx(direct.p_value, abs=1e-12)
        assert result.data["statistic"] == pytest.approx(direct.statistic, rel=1e-9)
    with pytest.raises(HeuresisError, match="contains x or y"):
        call(state, {"tool": "ci_test", "args": {"x": "X1", "y": "X2", "given": ["X1"]}})
    with pytest.raises(HeuresisError, match="unknown CI test 'dsep'"):  # the oracle is refused
        call(state, {"tool": "ci_test", "args": {"x": "X1", "y": "X2", "method": "dsep"}})


def _linear_data(n: int = 3000, seed: int = 0) -> tuple[np.ndarray, float]:
    """X1 -> X2 -> X3 and X1 -> X3 (X1 confounds X2 -> X3); total effect of X2 on X3 is 0.8."""
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = 1.5 * x1 + rng.normal(size=n)
    x3 = 0.8 * x2 - 2.0 * x1 + rng.normal(size=n)
    return np.column_stack([x1, x2, x3]), 0.8


def test_estimate_effect_backdoor_ols_recovers_a_known_effect():
    data, effect = _linear_data()
    state = state_from_data(data)
    adjusted = call(state, {"tool": "estimate_effect", "args": {
        "treatment": "X2", "outcome": "X3", "covariates": ["X1"]}}).data
    assert adjusted["ci_low"] <= effect <= adjusted["ci_high"]
    naive = call(state, {"tool": "estimate_effect", "args": {
        "treatment": "X2", "outcome": "X3", "covariates": []}}).data
    assert not naive["ci_low"] <= effect <= naive["ci_high"]  # the back door left open
    # default covariates: the treatment's parents in the working graph
    call(state, {"tool": "set_graph", "args": {"edges": ["X1 --> X2", "X2 --> X3",
                                                        "X1 --> X3"]}})
    default = call(state, {"tool": "estimate_effect", "args": {"treatment": "X2",
                                                               "outcome": "X3"}}).data
    assert default["covariates"] == ["X1"]
    assert default["effect"] == pytest.approx(adjusted["effect"])


def test_every_documented_effect_method_runs():
    """Each method the tool offers works after `make install` (econml arrives with the
    `effects` extra the Makefile installs) and recovers a linear effect."""
    methods = get_args(EffectArgs.model_fields["method"].annotation)
    assert set(methods) == {"ols", "dml"}
    data, effect = _linear_data(n=1500)
    state = state_from_data(data)
    for method in methods:
        result = call(state, {"tool": "estimate_effect", "args": {
            "treatment": "X2", "outcome": "X3", "covariates": ["X1"], "method": method}},
                      check=False)
        assert result.error is None, f"{method}: {result.error}"
        assert abs(result.data["effect"] - effect) < 0.1, method


def test_stability_of_a_strong_chain_is_near_one():
    rng = np.random.default_rng(1)
    x1 = rng.normal(size=400)
    x2 = x1 + 0.5 * rng.normal(size=400)
    x3 = x2 + 0.5 * rng.normal(size=400)
    x4 = rng.normal(size=400)
    state = state_from_data(np.column_stack([x1, x2, x3, x4]))
    frequencies = np.array(call(state, {"tool": "stability",
                                        "args": {"n_boot": 10}}).data["adjacency_frequency"])
    assert frequencies[0, 1] == 1.0 and frequencies[1, 2] == 1.0
    assert frequencies[0, 3] <= 0.3 and frequencies[2, 3] <= 0.3


def test_random_tools_replay_from_instance_seed_and_call_number():
    first, second = make_state("wild"), make_state("wild")
    action = {"tool": "orientation_probe", "args": {"x": "X1", "y": "X2"}}
    assert call(first, action).text == call(second, action).text
    first.call_number = second.call_number = 7
    stability = {"tool": "stability", "args": {"n_boot": 4, "frac": 0.5}}
    a, b = call(first, stability), call(second, stability)
    assert a.data == b.data
    first.call_number = second.call_number + 1
    assert first.rng().integers(1 << 30) != second.rng().integers(1 << 30)


def test_describe_data_flags_non_gaussian_columns():
    rng = np.random.default_rng(2)
    data = np.column_stack([rng.normal(size=500), rng.exponential(size=500)])
    result = call(state_from_data(data), {"tool": "describe_data"})
    assert result.data["columns"]["X2"]["normality_p"] < 1e-6
    assert result.data["columns"]["X1"]["normality_p"] > 1e-3
    assert result.data["columns"]["X2"]["skewness"] > 1


# ---- graph edits and queries ------------------------------------------------------------------

def test_edits_refuse_cycles_only_under_acyclic_targets():
    data = np.random.default_rng(0).normal(size=(60, 3))
    for target, refused in (("none", False), ("cpdag", True), ("dag", True)):
        state = state_from_data(data, target)
        call(state, {"tool": "add_edge", "args": {"x": "X1", "y": "X2"}})
        call(state, {"tool": "add_edge", "args": {"x": "X2", "y": "X3"}})
        if refused:
            with pytest.raises(HeuresisError, match="directed cycle"):
                call(state, {"tool": "add_edge", "args": {"x": "X3", "y": "X1"}})
            with pytest.raises(HeuresisError, match="directed cycle"):
                call(state, {"tool": "set_graph", "args": {
                    "edges": ["X1 -> X2", "X2 -> X3", "X3 -> X1"]}})
            call(state, {"tool": "add_edge", "args": {"x": "X3", "y": "X1",
                                                      "directed": False}})
            with pytest.raises(HeuresisError, match="directed cycle"):
                call(state, {"tool": "orient_edge", "args": {"x": "X3", "y": "X1"}})
            call(state, {"tool": "orient_edge", "args": {"x": "X1", "y": "X3"}})
        else:
            call(state, {"tool": "add_edge", "args": {"x": "X3", "y": "X1"}})
            assert not state.working_graph.is_dag()


def test_set_graph_reads_every_edge_form():
    state = state_from_data(np.random.default_rng(0).normal(size=(60, 6)))
    call(state, {"tool": "set_graph", "args": {"edges": [
        "X1 --> X2", "X3<--X2", "X3 --- X4", "X4 <-> X5", "X5 o-> X6", "X1 o-o X6"]}})
    graph = state.working_graph
    assert graph.edge("X1", "X2").is_directed
    assert graph.edge("X2", "X3").is_directed
    assert graph.edge("X3", "X4").is_undirected
    assert graph.marks[3, 4] == EdgeMark.ARROW and graph.marks[4, 3] == EdgeMark.ARROW
    assert graph.marks[5, 4] == EdgeMark.CIRCLE and graph.marks[4, 5] == EdgeMark.ARROW
    for bad, message in ((["X1 ~> X2"], "cannot read"), (["X1 --> X1"], "self-loop"),
                         (["X1 --> X2", "X2 --- X1"], "duplicate edge"),
                         (["X1 --> X9"], "unknown variable")):
        with pytest.raises(HeuresisError, match=message):
            call(state, {"tool": "set_graph", "args": {"edges": bad}})


def _brute_force_backdoor(dag: nx.DiGraph, i: int, j: int) -> bool:
    """An open back-door path i <- ... -> j: simple, no collider, into i and into j."""
    skeleton = dag.to_undirected()
    for path in nx.all_simple_paths(skeleton, i, j):
        if len(path) < 3 or not dag.has_edge(path[1], path[0]) or \
                not dag.has_edge(path[-2], path[-1]):
            continue
        colliders = any(dag.has_edge(path[k - 1], path[k]) and dag.has_edge(path[k + 1], path[k])
                        for k in range(1, len(path) - 1))
        if not colliders:
            return True
    return False


def test_backdoor_paths_match_brute_force_enumeration():
    rng = np.random.default_rng(3)
    for _ in range(60):
        d = int(rng.integers(3, 7))
        adjacency = np.triu(rng.random((d, d)) < 0.45, 1)
        order = rng.permutation(d)
        adjacency = adjacency[np.ix_(order, order)]
        dag = nx.DiGraph(adjacency)
        dag.add_nodes_from(range(d))
        for i, j in itertools.permutations(range(d), 2):
            found = backdoor_path(adjacency, i, j)
            assert (found is not None) == _brute_force_backdoor(dag, i, j)
            if found is not None:
                path, top = found
                assert path[0] == i and path[-1] == j and len(set(path)) == len(path)
                assert all(adjacency[path[k + 1], path[k]] for k in range(top))
                assert all(adjacency[path[k], path[k + 1]] for k in range(top, len(path) - 1))


def test_edge_queries_on_known_graphs():
    state = state_from_data(np.random.default_rng(0).normal(size=(60, 5)))
    call(state, {"tool": "set_graph", "args": {"edges": [
        "X1 --> X2", "X1 --> X3", "X2 --> X4", "X3 --> X4", "X4 --- X5"]}})
    ask = {name: lambda x, y, name=name: call(state, {"tool": name,
                                                     "args": {"x": x, "y": y}}).data
           for name in ("direct_cause", "collider", "confounder")}
    assert ask["direct_cause"]("X1", "X2")["answer"] == "yes"
    assert ask["direct_cause"]("X2", "X1")["answer"] == "no"
    assert ask["direct_cause"]("X4", "X5")["answer"] == "undetermined"
    assert ask["direct_cause"]("X1", "X4")["answer"] == "no"
    assert ask["collider"]("X2", "X3")["colliders"] == ["X4"]
    assert not ask["collider"]("X2", "X3")["shielded"]
    assert ask["collider"]("X1", "X4")["answer"] == "no"
    assert ask["confounder"]("X2", "X3") == {"answer": "yes", "path": ["X2", "X1", "X3"]}
    assert ask["confounder"]("X1", "X4")["answer"] == "no"  # X1 causes X4, no back door
    assert ask["confounder"]("X2", "X4")["answer"] == "yes"  # X2 <- X1 -> X3 -> X4


def test_graph_memory_round_trip_and_unknown_names():
    state = state_from_data(np.random.default_rng(0).normal(size=(60, 4)))
    call(state, {"tool": "add_edge", "args": {"x": "X1", "y": "X2"}})
    call(state, {"tool": "save_graph", "args": {"name": "one-edge"}})
    call(state, {"tool": "set_graph", "args": {"edges": []}})
    assert state.working_graph.n_edges() == 0
    call(state, {"tool": "load_graph", "args": {"name": "one-edge"}})
    assert state.working_graph == Graph.from_edges(state.names, [("X1", "X2")])
    with pytest.raises(HeuresisError, match="one-edge"):
        call(state, {"tool": "load_graph", "args": {"name": "two-edge"}})
    with pytest.raises(ActionError, match="pattern"):
        call(state, {"tool": "save_graph", "args": {"name": "bad name!"}})
