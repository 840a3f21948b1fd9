"""The language-model policy's prompts: four prompt levels, the stated target, the final turn.

The environment's first observation already states the task, the budgets and the tools; the
system prompt adds how to act (one action per turn, ReAct style) and, from level 2 up, method
hints. The levels are cumulative:

1. **bare** — the task and the action protocol only.
2. **workflow** — a general workflow: look at the data, run reference algorithms, check doubtful
   pairs with CI tests, set the graph, submit; budget discipline.
3. **methods** — adds how PC works and how it fails (a wrong independence decision deletes a
   true edge for good; Fisher-z misses non-linear dependence) and the non-linear CI tests.
4. **full** — adds checking deletions (re-test deleted pairs at their separating sets with a
   kernel test, demand a small p-value, restore only what survives) and code probes
   (``run_code``), plus bootstrap stability and orientation probes where the toolbox has them.

The mechanism family is never named; hints describe kinds of dependence in general terms.
Tool-specific hints appear only when the episode's toolbox (and guided condition) offers the
tool.
"""

from __future__ import annotations

from collections.abc import Sequence

from heuresis_env.errors import HeuresisError, UnknownNameError

#: prompt level → short name
PROMPT_LEVELS = {1: "bare", 2: "workflow", 3: "methods", 4: "full"}
TARGETS = ("none", "cpdag", "dag")
#: the first words of the final-turn request (the heuristic model of ``server.py`` reads it)
FINAL_TURN_MARKER = "FINAL TURN"

_TARGET_WORDING = {
    "none": ("Stated target: the skeleton. Only which pairs of variables are adjacent is "
             "scored; edge directions are optional."),
    "cpdag": ("Stated target: the CPDAG (the Markov equivalence class). Orient the edges the "
              "data determine (X1 --> X2) and leave the others undirected (X1 --- X2); "
              "directed cycles are refused."),
    "dag": ("Stated target: a DAG. Orient every edge (X1 --> X2); the graph must have no "
            "directed cycle."),
}

_PROTOCOL_NATIVE = (
    "You are a causal-discovery agent. The user's first message states the task and lists "
    "the tools. Work in a loop: think briefly about what you know and what to check next, "
    "then take exactly ONE action by calling one tool. After each action you receive its "
    "result and the budget left. Every action, a rejected one included, costs one step. When "
    "you are confident, or the budget is nearly spent, call submit with the final graph as "
    "`edges` (for example [\"X1 --> X2\", \"X3 --- X4\"]).")

_PROTOCOL_TEXT = (
    "You are a causal-discovery agent. The user's first message states the task and lists "
    "the tools. Work in a loop: think briefly about what you know and what to check next, "
    "then take exactly ONE action. Write the action as one JSON object "
    '{"tool": NAME, "args": {...}} at the end of your reply (a ```json block is fine) and '
    "nothing after it. After each action you receive its result and the budget left. Every "
    "action, a rejected one included, costs one step. When you are confident, or the budget "
    'is nearly spent, submit: {"tool": "submit", "args": {"edges": ["X1 --> X2", '
    '"X3 --- X4"]}}.')

_WORKFLOW = (
    "A sound workflow: (1) look at the data (describe_data); (2) run one or more reference "
    "algorithms (run_algorithm; save_as keeps an output in the graph memory); (3) where "
    "algorithms disagree or the evidence for a pair is weak, test the pair with ci_test; "
    "(4) set the working graph to your best estimate (set_graph, or load_graph of a saved "
    "output followed by add_edge/remove_edge); (5) submit. Plan for the budget: a graph that "
    "is not submitted is scored as it stands.")

_METHODS = (
    "How PC works and fails: PC starts from the complete graph and deletes the edge between "
    "x and y at the first conditioning set S for which a conditional-independence test "
    "accepts x independent of y given S (p > alpha). A deletion is final: one wrong "
    "acceptance of independence removes a true edge for good and changes the later tests "
    "and orientations. Fisher-z tests only linear (partial) correlation; when a dependence "
    "is non-linear (a U-shaped, saturating or piecewise relation, or noise whose size "
    "depends on the cause), Fisher-z can report independence where the dependence is "
    "strong, and PC with Fisher-z then deletes true edges.\n"
    "Non-linear tests: kci (kernel CI test) detects non-linear dependence at a higher cost; "
    "rcit and rcot are fast random-feature approximations of it; dcor (distance "
    "correlation) detects any dependence. Their power is lower at small sample sizes. A pair "
    "with a large Fisher-z p-value but a small kci or dcor p-value is dependent in a "
    "non-linear way.")

_CHECK_DELETIONS = (
    "Checking deletions: the largest source of error is a true edge wrongly deleted. For a "
    "pair an algorithm left non-adjacent although the variables are marginally dependent, "
    "find the conditioning set that separated it{where} and re-test the pair at that set "
    "with kci. Restore the edge only when the dependence persists at every plausible "
    "conditioning set you try, and demand a small p-value (0.01 or less): you run many "
    "tests, and some will reject by chance. An edge that only one algorithm outputs{stable} "
    "deserves a test before you keep it.")

_CODE_PROBES = (
    "Code probes: run_code runs your own Python over X (numpy, scipy, scikit-learn). Use it "
    "for checks no tool offers, for example: regress one variable on another with a flexible "
    "model and test whether the residual still depends on a third variable; compare the "
    "distance correlation of a pair with its |Pearson r| (a large gap flags non-linear "
    "dependence); look at conditional scatter within bins of a conditioning variable.")

_ORIENTATION = (
    "Orientation: orientation_probe gives pairwise direction evidence (additive-noise fits "
    "with HSIC tests in both directions, LiNGAM likelihood ratios); use it on edges the "
    "v-structures and Meek's rules leave undirected.")


def check_prompt_level(level: int) -> int:
    """The level as an int, or an error naming the levels."""
    if isinstance(level, bool) or level not in PROMPT_LEVELS:
        raise UnknownNameError("prompt level", level, [str(k) for k in PROMPT_LEVELS])
    return int(level)


def check_target(target: str) -> str:
    if target not in TARGETS:
        raise UnknownNameError("target", target, TARGETS)
    return target


def target_wording(target: str) -> str:
    """One sentence on what the stated target asks the final graph to be."""
    return _TARGET_WORDING[check_target(target)]


def method_hints(level: int, *, toolbox: str = "full", guided: bool = False,
                 target: str = "none") -> list[str]:
    """The hint paragraphs of a prompt level (none at level 1)."""
    level = check_prompt_level(level)
    full = toolbox == "full"
    hints: list[str] = []
    if level >= 2:
        hints.append(_WORKFLOW)
    if level >= 3:
        hints.append(_METHODS)
    if level >= 4:
        where = (" (deletion_log shows it for every pair PC-KCI deleted from your starting "
                 "graph)" if guided else " (run PC with Fisher-z and with KCI and compare: a "
                 "pair kept by one and deleted by the other is a candidate)")
        stable = (", or one with a low bootstrap frequency (stability)," if full else ",")
        hints.append(_CHECK_DELETIONS.format(where=where, stable=stable))
        if full:
            hints.append(_CODE_PROBES)
            if target != "none":
                hints.append(_ORIENTATION)
    return hints


def system_prompt(level: int, target: str, *, toolbox: str = "full", guided: bool = False,
                  native_tools: bool = True) -> str:
    """The system prompt of an episode: protocol, stated target, and the level's hints."""
    if toolbox not in ("full", "minimal"):
        raise UnknownNameError("toolbox", toolbox, ("full", "minimal"))
    parts = [_PROTOCOL_NATIVE if native_tools else _PROTOCOL_TEXT, target_wording(target)]
    parts += method_hints(level, toolbox=toolbox, guided=guided, target=target)
    return "\n\n".join(parts)


def budget_line(steps_left: int, seconds_left: float | None) -> str:
    """The budget note appended to every observation."""
    steps = f"{steps_left} step{'s' if steps_left != 1 else ''} left"
    if seconds_left is None:
        return f"[{steps}]"
    return f"[{steps}; about {max(0.0, seconds_left):.0f} s of wall time left]"


def observation_message(text: str, steps_left: int, seconds_left: float | None) -> str:
    """A tool's output as the model reads it: the environment's text and the budget left."""
    return f"{text}\n\n{budget_line(steps_left, seconds_left)}"


def _example(names: Sequence[str]) -> str:
    a, b = names[0], names[1 % len(names)]
    c = names[2 % len(names)]
    return f"{a} --> {b}\n{b} --- {c}"


def final_request(names: Sequence[str], target: str, reason: str) -> str:
    """The last turn's request for the final edge list (``reason``: "steps", "time", "error",
    or "direct" — the first turn of a policy without the tool loop)."""
    if not names:
        raise HeuresisError("the final request needs the variable names")
    why = {"steps": "the step budget is used up",
           "time": "the wall time is nearly over",
           "error": "the model service failed on the last turn",
           "direct": "answer from the task statement alone, without any tool"}
    if reason not in why:
        raise UnknownNameError("final-turn reason", reason, why)
    return (f"{FINAL_TURN_MARKER}: {why[reason]}. Do not call any tool other than submit. "
            "Give your final graph now: call submit with `edges`, or reply with the edge "
            f"list only, one edge per line, for example\n{_example(names)}\n"
            f"(reply [] for a graph with no edges). Use only the names "
            f"{', '.join(names)}. {target_wording(target)}")


def final_retry_request(problem: str, names: Sequence[str], target: str) -> str:
    """The one retry after an edge list that could not be accepted."""
    return (f"{FINAL_TURN_MARKER} (retry): your edge list could not be accepted: {problem}. "
            "Reply again with the corrected final edge list only, one edge per line, for "
            f"example\n{_example(names)}\nUse only the names {', '.join(names)}. "
            f"{target_wording(target)}")


NOT_RUN_MESSAGE = ("Not run: one action per turn. Only your first tool call was run; call "
                   "this one again in a later turn if you still need it.")
FINAL_NOT_RUN_MESSAGE = "Not run: this is the final turn; only the final edge list counts."
