"""The toolbox reference, rendered as Markdown from the registry.

``docs/toolbox.md`` is this module's output (``python -m heuresis_env.env.toolbox.reference >
docs/toolbox.md``); a test fails when the page is stale. ``heuresis tools`` prints it too.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from heuresis_env.discovery.algorithms import ALGORITHMS
from heuresis_env.env.toolbox.registry import (
    CATEGORIES,
    MAX_ACTION_CHARS,
    RL_EXPERIMENT_OPERATIONS,
    RL_OPERATIONS,
    TOOLS,
    Tool,
)
from heuresis_env.env.toolbox.state import agent_ci_tests

_CATEGORY_TITLES = {
    "data": "Variable level: the data and independence tests",
    "experiment": "Experiments (with an experiment budget: the -int ids, experiments=ROWS)",
    "algorithm": "Graph level: algorithms, stability, orientation, the deletion log",
    "code": "Code",
    "graph edit": "Editing the working graph",
    "memory": "Graph memory",
    "query": "Edge level: queries on a graph",
    "effect": "Effect level",
    "answer": "Question episodes",
}


def _type_text(schema: dict[str, Any]) -> str:
    """A short type for one argument's JSON schema (``list[string]``, ``integer 1..200``)."""
    if "anyOf" in schema:
        options = [_type_text(s) for s in schema["anyOf"]]
        return " or ".join(options)
    if "enum" in schema:
        return " / ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    kind = schema.get("type", "any")
    if kind == "array":
        inner = _type_text(schema.get("items", {}))
        return f"list[{inner}]"
    if kind == "object":
        values = schema.get("additionalProperties")
        return f"dict[string, {_type_text(values)}]" if isinstance(values, dict) else "object"
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if kind in ("integer", "number") and (low is not None or high is not None):
        left = "(" if "exclusiveMinimum" in schema else "["
        right = ")" if "exclusiveMaximum" in schema else "]"
        return f"{kind} in {left}{'' if low is None else low}, {'' if high is None else high}{right}"
    return kind


def _arguments_table(tool: Tool, experiments: bool = False) -> list[str]:
    schema = tool.parameters_schema(experiments)
    properties = schema.get("properties", {})
    if not properties:
        return ["No arguments."]
    required = set(schema.get("required", []))
    lines = ["| argument | type | default | description |", "|---|---|---|---|"]
    if experiments:  # only what the experiment budget adds or changes
        plain = tool.parameters_schema().get("properties", {})
        properties = {k: v for k, v in properties.items() if plain.get(k) != v}
    for name, prop in properties.items():
        default = "required" if name in required else f"`{json.dumps(prop.get('default'))}`"
        if name not in required and "default" not in prop:
            default = "`[]`" if prop.get("type") == "array" else "`{}`"
        description = str(prop.get("description", "")).replace("|", "\\|")
        lines.append(f"| `{name}` | {_type_text(prop)} | {default} | {description} |")
    return lines


def _offered_in(tool: Tool) -> str:
    parts = []
    if tool.ends_episode or tool.category == "code":
        parts.append("every toolbox" if tool.minimal else "full and code toolbox")
    else:
        parts.append("full and minimal toolbox" if tool.minimal else "full toolbox only")
    if tool.guided_only:
        parts.append("guided condition only")
    if tool.experiments_only:
        parts.append("with an experiment budget only")
    if tool.tasks == ("graph",):
        parts.append("graph episodes only")
    elif tool.tasks == ("qa",):
        parts.append("question episodes only (task='qa')")
    return ", ".join(parts)


def _algorithms_section() -> list[str]:

    lines = ["## Reference algorithms", "",
             "Names accepted by `run_algorithm` and `stability` (parameters not given keep "
             "their defaults; the interventional ones, `run_algorithm` with an experiment "
             "budget only):", "",
             "| name | output | parameters (default) | description |", "|---|---|---|---|"]
    for spec in ALGORITHMS.values():
        described = spec.describe()
        params = ", ".join(f"`{k}`={json.dumps(v['default'])}"
                           for k, v in described["params"].items()) or "none"
        first_line = " ".join(str(described["description"]).split())
        kind = " (interventional)" if spec.interventional else ""
        lines.append(f"| `{spec.name}`{kind} | {described['graph_type']} | {params} | "
                     f"{first_line} |")
    return lines


def _ci_tests_section() -> list[str]:

    names = agent_ci_tests()
    return ["## CI test methods", "",
            "`ci_test(method=...)` accepts: " + ", ".join(f"`{n}`" for n in names) + ". "
            "Results are cached per instance, so repeating a test returns the same answer "
            "(the randomized tests are seeded per instance)."]


def _rl_section() -> list[str]:
    providers = {t.rl.operation: t for t in TOOLS.values() if t.rl is not None}
    lines = ["## The RL view's action table", "",
             "The discrete actions of `interface=\"rl\"` are derived from these tools, in this "
             "order (p = d(d-1)/2 unordered pairs):", "",
             "| operation | tool call | ranges over |", "|---|---|---|"]
    ranges = {"unordered": "unordered pairs (p actions)",
              "ordered": "ordered pairs (2p actions)", "none": "one action",
              "variable": "variables (d actions), appended with an experiment budget only"}
    calls = {"add": "`add_edge(x, y, directed=false)`", "remove": "`remove_edge(x, y)`",
             "orient": "`orient_edge(x, y)`",
             "test": "`ci_test(x, y, given=<PC-Fisher-z's deleting set, or []>, method=\"kci\")`",
             "submit": "`submit()`",
             "intervene": "`intervene(x, value=null, n=min(100, budget))`"}
    for operation in (*RL_OPERATIONS, *RL_EXPERIMENT_OPERATIONS):
        tool = providers.get(operation)
        if tool is None or tool.rl is None:
            continue
        lines.append(f"| {operation} | {calls.get(operation, tool.name)} | "
                     f"{ranges[tool.rl.pairs]} |")
    return lines


def render_reference() -> str:
    """The whole toolbox reference as Markdown."""
    tools = sorted(TOOLS.values(), key=lambda t: CATEGORIES.index(t.category))
    lines = [
        "# Toolbox reference",
        "",
        "<!-- Generated by `python -m heuresis_env.env.toolbox.reference > docs/toolbox.md` "
        "from the tool registry; do not edit by hand. -->",
        "",
        "Every tool has one definition in `heuresis_env.env.toolbox`: a name, a pydantic argument "
        "model (validation and JSON schema), and a result with text and structured data. The "
        "text view reads an action as the JSON object `{\"tool\": NAME, \"args\": {...}}` (at "
        f"most {MAX_ACTION_CHARS} characters); `env.unwrapped.tool_schemas()` exports the same "
        "definitions for function calling, and the RL view derives its action table from them.",
        "",
        "A rejected action (bad JSON, unknown tool or argument, unknown variable, invalid edit) "
        "returns an error observation, costs one step and leaves the working graph unchanged. "
        "Edits accept `evidence`, the step numbers of the calls that justify them; the trace "
        "links each edit to that evidence (by default, the calls since the pair's last edit). "
        "Random tools draw from a generator derived from the instance and the call number, so "
        "an episode replays exactly.",
        "",
        "Toolboxes: `full` (every tool), `minimal` (no `run_code`, `stability`, "
        "`orientation_probe`) and `code` (only `run_code` and the tool that ends the episode). "
        "Graph episodes end with `submit`; question episodes (`task=\"qa\"`, see "
        "`docs/questions.md`) end with `answer` instead. An episode with an experiment budget "
        "(the `-int` ids, `experiments=ROWS`; see `docs/experiments.md`) adds `intervene`, "
        "and its data tools read the experiments' rows.",
        "",
        "| tool | level | offered in | edits the graph |",
        "|---|---|---|---|",
    ]
    for tool in tools:
        lines.append(f"| [`{tool.name}`](#{tool.name}) | {tool.category} | "
                     f"{_offered_in(tool)} | {'yes' if tool.edits_graph else 'no'} |")
    for category in CATEGORIES:
        members = [t for t in tools if t.category == category]
        if not members:
            continue
        lines += ["", f"## {_CATEGORY_TITLES.get(category, category)}"]
        for tool in members:
            lines += ["", f"### {tool.name}", "", f"`{tool.signature()}`", "", tool.description,
                      "", f"Offered in: {_offered_in(tool)}."
                      + (" Draws from the call's random generator." if tool.random else ""),
                      ""]
            lines += _arguments_table(tool)
            if tool.experiment_args is not None:
                lines += ["", "With an experiment budget the arguments grow "
                          f"(`{tool.signature(True)}`):", ""]
                lines += _arguments_table(tool, experiments=True)
    lines += [""] + _algorithms_section() + [""] + _ci_tests_section() + [""] + _rl_section()
    return "\n".join(lines) + "\n"


def main() -> int:

    sys.stdout.write(render_reference())
    return 0


if __name__ == "__main__":
    sys.exit(main())
