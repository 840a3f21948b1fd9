"""The task statement, the first observation's text of an episode: the task, the rules, the
budget and the offered tools, one line each by category."""

from __future__ import annotations

from collections.abc import Sequence

from heuresis_env.env.toolbox.registry import CATEGORIES, Tool


def graph_task_statement(n: int, d: int, names: Sequence[str], target: str, guided: bool,
                         max_steps: int, max_seconds: float | None, description: str,
                         has_ground_truth: bool, tools: Sequence[str],
                         experiment_rows: int = 0) -> str:
    """The statement of a graph episode over a table of ``n`` rows and ``d`` columns named
    ``names``, ending with the tool lines of :func:`tool_lines`."""
    target_rules = {
        "none": "Edge directions are optional: the score compares skeletons.",
        "cpdag": ("Give the Markov equivalence class (CPDAG): orient the edges the data "
                  "determine and leave the others undirected (X1 --- X2). Orientation is "
                  "scored by SHD against the true CPDAG; directed cycles are refused."),
        "dag": ("Give a DAG: orient every edge (X1 --> X2). Orientation is scored by SHD "
                "against the true DAG; directed cycles are refused."),
    }
    start = ("empty" if not guided else
             "as the output of the PC algorithm with the KCI test (alpha = 0.05); "
             "deletion_log shows why PC removed each missing edge")
    wall = ("no wall-time limit" if max_seconds is None
            else f"{max_seconds:g} seconds of wall time")
    about = ("An unknown structural causal model over a directed acyclic graph generated "
             "them; every column is standardized and the columns are in random order, so "
             "names and order carry no information.")
    if description:
        about = description
    score = ("The main score is the adjacency F1 of your graph against the true graph."
             if has_ground_truth else
             "There is no known true graph for this table: your submitted graph is the "
             "result, and it is not scored.")
    lines = [
        "TASK: recover the causal graph behind a data table.",
        "",
        f"The data X has {n} rows and {d} columns named "
        f"{', '.join(names)}. {about} Find which pairs of variables are joined by a "
        f"direct causal edge. {score} " + target_rules[target],
        "",
        f"You edit a working graph, which starts {start}. Each step is one action, a JSON "
        'object {"tool": NAME, "args": {...}}, for example',
        '  {"tool": "ci_test", "args": {"x": "X1", "y": "X2", "given": ["X3"], '
        '"method": "kci"}}',
        '  {"tool": "add_edge", "args": {"x": "X1", "y": "X2"}}',
        "Tool calls read evidence and leave the graph as it is; edits change it. Every "
        f"action, a rejected one included, costs one step. Budget: {max_steps} steps "
        f"and {wall}; when it runs out, the working graph is scored as it stands. Finish "
        'with {"tool": "submit", "args": {}}.',
        *([] if not experiment_rows else [
            "",
            "You may also run experiments on the hidden model: intervene(target, value, n) "
            "draws n fresh rows with the target set by intervention and adds them to the data "
            f"as a new regime. Experiment budget: {experiment_rows} rows in all, apart from "
            "the step budget (each call also costs a step)."]),
        "",
        "TOOLS (name(arguments) - what it does):",
        *tools,
    ]
    return "\n".join(lines)


def question_budget(max_steps: int, max_seconds: float | None) -> str:
    """The budget sentence of a question episode's statement."""
    return (f"Budget: {max_steps} steps and "
            + ("no wall-time limit." if max_seconds is None
               else f"{max_seconds:g} seconds of wall time."))


def tool_lines(offered: Sequence[Tool], experiments: bool = False) -> list[str]:
    """The offered tools by category, one line each, for the task statement (``experiments``:
    the signatures of an episode with an experiment budget)."""
    lines = []
    for category in CATEGORIES:
        tools = [t for t in offered if t.category == category]
        if not tools:
            continue
        lines.append(f"[{category}]")
        lines += [f"  {t.signature(experiments)} - {t.summary}" for t in tools]
    return lines
