"""Graph tools: edits of the working graph, submit, the graph memory, and edge-level queries.

Edits run through small index kernels (``*_at``) shared with the RL view, so a discrete RL
action and the matching text-view call change the graph in exactly the same way. A kernel
either applies the whole edit or returns an error message and leaves the graph untouched.
Under ``target="dag"`` or ``"cpdag"`` an edit that closes a directed cycle is refused.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from heuresis_env.env.toolbox.registry import (
    MAX_LIST_ITEMS,
    MAX_NAME_CHARS,
    EditArgs,
    EvidenceIds,
    NoArgs,
    RLSpec,
    Tool,
    ToolArgs,
    ToolResult,
    VariableName,
    register_tool,
)
from heuresis_env.env.toolbox.state import EpisodeState
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.graphs import (
    Edge,
    EdgeMark,
    Graph,
    backdoor_path,
    has_directed_cycle,
    parse_edge_text,
)

#: targets under which a directed cycle is an invalid working graph
ACYCLIC_TARGETS = ("cpdag", "dag")
#: the most graphs the memory holds in one episode
MAX_SAVED_GRAPHS = 64

# ---- index kernels (shared with the RL view) --------------------------------------------------

# plain ints: an IntEnum member lookup costs microseconds, and the RL view runs these kernels
# tens of thousands of times a second
NONE, TAIL, ARROW = int(EdgeMark.NONE), int(EdgeMark.TAIL), int(EdgeMark.ARROW)


def _directed(marks: np.ndarray) -> np.ndarray:
    return (marks == ARROW) & (marks.T == TAIL)


def reaches(directed: np.ndarray, start: int, goal: int) -> bool:
    """Whether a directed path leads from ``start`` to ``goal``."""
    seen = np.zeros(directed.shape[0], dtype=bool)
    seen[start] = True
    frontier = [start]
    while frontier:
        k = frontier.pop()
        row = directed[k]
        if row[goal]:
            return True
        new = np.flatnonzero(row & ~seen)
        seen[new] = True
        frontier.extend(new.tolist())
    return False


def closes_cycle(marks: np.ndarray, i: int, j: int) -> bool:
    """Whether making the edge i → j (replacing any edge between i and j) closes a cycle."""
    directed = _directed(marks)
    directed[i, j] = directed[j, i] = False
    return reaches(directed, j, i)


def _name(state: EpisodeState, i: int) -> str:
    return state.names[i]


def _cycle_message(state: EpisodeState, i: int, j: int) -> str:
    return (f"{_name(state, i)} --> {_name(state, j)} would close a directed cycle "
            f"({_name(state, j)} already reaches {_name(state, i)}), which "
            f"target={state.target!r} forbids")


def _check_pair(state: EpisodeState, i: int, j: int) -> str | None:
    if i == j:
        return (f"self-loop: an edge joins two different variables, got "
                f"{_name(state, i)} twice")
    return None


def add_edge_at(state: EpisodeState, i: int, j: int, directed: bool) -> str | None:
    """Add i → j (``directed``) or i — j; refuses self-loops, duplicates and cycles."""
    problem = _check_pair(state, i, j)
    if problem:
        return problem
    marks = state.working_graph.marks
    if marks[i, j] != NONE:
        return (f"duplicate edge: {state.edge_text(i, j)} is already in the working graph; "
                "use orient_edge, reverse_edge or remove_edge to change it")
    if directed and state.target in ACYCLIC_TARGETS and closes_cycle(marks, i, j):
        return _cycle_message(state, i, j)
    marks[j, i] = TAIL
    marks[i, j] = ARROW if directed else TAIL
    return None


def remove_edge_at(state: EpisodeState, i: int, j: int) -> str | None:
    """Remove the edge between i and j, whatever its marks."""
    problem = _check_pair(state, i, j)
    if problem:
        return problem
    marks = state.working_graph.marks
    if marks[i, j] == NONE:
        return f"no edge between {_name(state, i)} and {_name(state, j)} to remove"
    marks[i, j] = marks[j, i] = NONE
    return None


def orient_edge_at(state: EpisodeState, i: int, j: int) -> str | None:
    """Make the existing edge between i and j the directed edge i → j."""
    problem = _check_pair(state, i, j)
    if problem:
        return problem
    marks = state.working_graph.marks
    if marks[i, j] == NONE:
        return (f"no edge between {_name(state, i)} and {_name(state, j)} to orient; "
                "add it with add_edge")
    if marks[i, j] == ARROW and marks[j, i] == TAIL:
        return f"{state.edge_text(i, j)} is already oriented that way"
    if state.target in ACYCLIC_TARGETS and closes_cycle(marks, i, j):
        return _cycle_message(state, i, j)
    marks[j, i] = TAIL
    marks[i, j] = ARROW
    return None


def reverse_edge_at(state: EpisodeState, i: int, j: int) -> str | None:
    """Flip the directed edge between i and j (either direction)."""
    problem = _check_pair(state, i, j)
    if problem:
        return problem
    marks = state.working_graph.marks
    if marks[i, j] == NONE:
        return f"no edge between {_name(state, i)} and {_name(state, j)} to reverse"
    if marks[i, j] == ARROW and marks[j, i] == TAIL:
        source, sink = i, j
    elif marks[j, i] == ARROW and marks[i, j] == TAIL:
        source, sink = j, i
    else:
        return (f"{state.edge_text(i, j)} is not a directed edge; use orient_edge to give "
                "it a direction")
    if state.target in ACYCLIC_TARGETS and closes_cycle(marks, sink, source):
        return _cycle_message(state, sink, source)
    marks[source, sink] = TAIL
    marks[sink, source] = ARROW
    return None


# ---- argument models ----------------------------------------------------------------------------

class PairArgs(EditArgs):
    x: VariableName
    y: VariableName
    evidence: EvidenceIds = Field(default_factory=list)


class AddEdgeArgs(EditArgs):
    x: VariableName
    y: VariableName
    directed: bool = Field(True, description="True adds x --> y; False adds x --- y")
    evidence: EvidenceIds = Field(default_factory=list)


GraphName = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS,
                                 pattern=r"^[A-Za-z0-9_.\-]+$",
                                 description="a name of letters, digits, _ . -")]


class SetGraphArgs(EditArgs):
    edges: list[Annotated[str, Field(max_length=3 * MAX_NAME_CHARS)]] = Field(
        max_length=MAX_LIST_ITEMS,
        description='the whole new graph, one edge a string: "X1 --> X2", "X1 --- X2", '
                    '"X1 <-> X2", "X1 o-> X2", "X1 o-o X2" (an empty list empties the graph)')
    evidence: EvidenceIds = Field(default_factory=list)


class GraphNameArgs(ToolArgs):
    name: GraphName


class LoadGraphArgs(EditArgs):
    name: GraphName
    evidence: EvidenceIds = Field(default_factory=list)


class ShowGraphArgs(ToolArgs):
    name: GraphName | None = Field(None, description="a saved graph; default: the working graph")


class QueryArgs(ToolArgs):
    x: VariableName
    y: VariableName
    graph: GraphName | None = Field(
        None, description="a saved graph to query; default: the working graph")


# ---- text helpers ----------------------------------------------------------------------------

def graph_summary(graph: Graph) -> str:
    n = graph.n_edges()
    directed = int(np.count_nonzero(graph.directed_adjacency()))
    undirected = int(np.count_nonzero(np.triu(graph.undirected_adjacency())))
    other = n - directed - undirected
    parts = [f"{directed} directed", f"{undirected} undirected"]
    if other:
        parts.append(f"{other} other (PAG marks)")
    return f"{n} edges ({', '.join(parts)})"


def _pair_indices(state: EpisodeState, args: PairArgs | AddEdgeArgs | QueryArgs
                  ) -> tuple[int, int]:
    return state.variable(args.x), state.variable(args.y)


def _edit_result(state: EpisodeState, message: str | None, done: str,
                 data: dict | None = None) -> ToolResult:
    if message is not None:
        return ToolResult.failure(message)
    return ToolResult(
        text=f"{done} The working graph has {graph_summary(state.working_graph)}.",
        data={"n_edges": state.working_graph.n_edges(), **(data or {})})


# ---- edit tools ----------------------------------------------------------------------------

def _add_edge(state: EpisodeState, args: AddEdgeArgs) -> ToolResult:
    i, j = _pair_indices(state, args)
    message = add_edge_at(state, i, j, args.directed)
    done = f"Added {state.edge_text(i, j)}." if message is None else ""
    return _edit_result(state, message, done)


def _remove_edge(state: EpisodeState, args: PairArgs) -> ToolResult:
    i, j = _pair_indices(state, args)
    before = state.edge_text(i, j)
    return _edit_result(state, remove_edge_at(state, i, j), f"Removed {before}.")


def _orient_edge(state: EpisodeState, args: PairArgs) -> ToolResult:
    i, j = _pair_indices(state, args)
    before = state.edge_text(i, j)
    message = orient_edge_at(state, i, j)
    done = f"Oriented {before} as {state.edge_text(i, j)}." if message is None else ""
    return _edit_result(state, message, done)


def _reverse_edge(state: EpisodeState, args: PairArgs) -> ToolResult:
    i, j = _pair_indices(state, args)
    before = state.edge_text(i, j)
    message = reverse_edge_at(state, i, j)
    done = f"Reversed {before} to {state.edge_text(i, j)}." if message is None else ""
    return _edit_result(state, message, done)


def parse_edge(state: EpisodeState, text: str) -> Edge:
    """One edge string (``"X1 --> X2"``) over the episode's variables; raises on bad input."""
    edge = parse_edge_text(text)
    state.variable(edge.u)
    state.variable(edge.v)
    return edge


def validate_for_target(state: EpisodeState, graph: Graph) -> None:
    """Refuse a whole graph with a directed cycle under the cpdag and dag targets."""
    if state.target in ACYCLIC_TARGETS and has_directed_cycle(graph.directed_adjacency()):
        raise HeuresisError(f"the graph has a directed cycle, which target={state.target!r} "
                            "forbids")


class SubmitArgs(EditArgs):
    edges: list[Annotated[str, Field(max_length=3 * MAX_NAME_CHARS)]] | None = Field(
        None, max_length=MAX_LIST_ITEMS,
        description="optional: the final graph as an edge list (as in set_graph); when given "
                    "it replaces the working graph before submitting, and a list that cannot "
                    "be read is rejected without ending the episode")
    evidence: EvidenceIds = Field(default_factory=list)


def _graph_from_edges(state: EpisodeState, edges: list[str]) -> Graph:
    """A graph from edge strings, checked for duplicates and for the episode's target."""
    graph = Graph(state.names)
    seen: dict[frozenset[str], str] = {}
    for text in edges:
        edge = parse_edge(state, text)
        pair = frozenset((edge.u, edge.v))
        if pair in seen:
            raise HeuresisError(f"duplicate edge: {text!r} and {seen[pair]!r} join the same "
                                "pair; give each pair once")
        seen[pair] = text
        graph.set_edge(edge.u, edge.v, edge.mark_u, edge.mark_v)
    validate_for_target(state, graph)
    return graph


def _set_graph(state: EpisodeState, args: SetGraphArgs) -> ToolResult:
    state.working_graph = _graph_from_edges(state, args.edges)
    return _edit_result(state, None, "Replaced the working graph.")


def _load_graph(state: EpisodeState, args: LoadGraphArgs) -> ToolResult:
    graph = _saved(state, args.name)
    validate_for_target(state, graph)
    state.working_graph = graph.copy()
    return _edit_result(state, None, f"Loaded {args.name!r} as the working graph.")


def _submit(state: EpisodeState, args: SubmitArgs) -> ToolResult:
    if args.edges is not None:
        state.working_graph = _graph_from_edges(state, args.edges)
    return ToolResult(
        text=f"Submitted the working graph: {graph_summary(state.working_graph)}. "
             "The episode is over.",
        data={"n_edges": state.working_graph.n_edges()}, submitted=True)


# ---- memory ------------------------------------------------------------------------------------

def _saved(state: EpisodeState, name: str) -> Graph:
    try:
        return state.memory[name]
    except KeyError:
        known = list(state.memory) or ["(none saved yet)"]
        raise UnknownNameError("saved graph", name, known) from None


def save_to_memory(state: EpisodeState, name: str, graph: Graph) -> str:
    """Store a copy of ``graph`` under ``name``; returns a note on what happened."""
    if name not in state.memory and len(state.memory) >= MAX_SAVED_GRAPHS:
        raise HeuresisError(f"the graph memory is full ({MAX_SAVED_GRAPHS} graphs); "
                            "reuse a name to replace a graph")
    note = "replaced" if name in state.memory else "saved"
    state.memory[name] = graph.copy()
    return note


def _save_graph(state: EpisodeState, args: GraphNameArgs) -> ToolResult:
    note = save_to_memory(state, args.name, state.working_graph)
    return ToolResult(text=f"Working graph {note} as {args.name!r} "
                           f"({graph_summary(state.working_graph)}).",
                      data={"name": args.name})


def _list_graphs(state: EpisodeState, args: NoArgs) -> ToolResult:
    if not state.memory:
        return ToolResult(text="No saved graphs. save_graph(name) stores the working graph; "
                               "run_algorithm(..., save_as=name) stores an algorithm's output.",
                          data={"graphs": {}})
    lines = [f"{name}: {graph_summary(graph)}" for name, graph in state.memory.items()]
    return ToolResult(text="Saved graphs:\n" + "\n".join(lines),
                      data={"graphs": {n: g.n_edges() for n, g in state.memory.items()}})


def _show_graph(state: EpisodeState, args: ShowGraphArgs) -> ToolResult:
    graph = state.working_graph if args.name is None else _saved(state, args.name)
    label = "Working graph" if args.name is None else f"Graph {args.name!r}"
    return ToolResult(text=f"{label}: {graph_summary(graph)}\n{graph.to_text()}",
                      data={"graph": graph.to_dict()})


# ---- edge-level queries ----------------------------------------------------------------------

def _query_graph(state: EpisodeState, args: QueryArgs) -> tuple[Graph, str, int, int]:
    graph = state.working_graph if args.graph is None else _saved(state, args.graph)
    label = "the working graph" if args.graph is None else f"graph {args.graph!r}"
    i, j = _pair_indices(state, args)
    if i == j:
        raise HeuresisError(f"x and y must differ, got {args.x!r} twice")
    return graph, label, i, j


def _direct_cause(state: EpisodeState, args: QueryArgs) -> ToolResult:
    graph, label, i, j = _query_graph(state, args)
    x, y = args.x, args.y
    edge = graph.edge(x, y)
    if edge is None:
        answer, why = "no", f"{x} and {y} are not adjacent in {label}"
    elif edge.is_directed:  # Edge.edge(x, y) keeps x first: tail at x, arrow at y
        answer, why = "yes", f"{edge} in {label}"
    elif edge.mark_u == EdgeMark.ARROW and edge.mark_v == EdgeMark.TAIL:
        answer, why = "no", f"the edge points the other way ({y} --> {x}) in {label}"
    elif edge.is_undirected:
        answer, why = "undetermined", (f"{edge} is undirected in {label}: its direction is "
                                       "not identified there")
    else:
        answer, why = "undetermined", f"{edge} in {label} has PAG marks"
    return ToolResult(text=f"Is {x} a direct cause of {y}? {answer}: {why}.",
                      data={"answer": answer, "edge": None if edge is None else str(edge)})


def _collider(state: EpisodeState, args: QueryArgs) -> ToolResult:
    graph, label, i, j = _query_graph(state, args)
    directed = state.directed_matrix(graph)
    undirected = graph.undirected_adjacency()
    common = [k for k in range(state.d) if directed[i, k] and directed[j, k]]
    shielded = bool(graph.marks[i, j] != EdgeMark.NONE)
    possible = [k for k in range(state.d) if k not in common and k not in (i, j)
                and (directed[i, k] or undirected[i, k]) and (directed[j, k] or undirected[j, k])]
    x, y = args.x, args.y
    kind = "shielded: x and y are adjacent" if shielded else "an unshielded v-structure"
    if common:
        shown = ", ".join(f"{x} --> {state.names[k]} <-- {y}" for k in common)
        text = f"Do {x} and {y} have a common effect (collider)? yes: {shown} ({kind})."
        answer = "yes"
    elif possible:
        shown = ", ".join(state.names[k] for k in possible)
        text = (f"Do {x} and {y} have a common effect (collider)? undetermined: no directed "
                f"collider in {label}, but undirected edges leave {shown} possible.")
        answer = "undetermined"
    else:
        text = f"Do {x} and {y} have a common effect (collider)? no: none in {label}."
        answer = "no"
    return ToolResult(text=text, data={
        "answer": answer, "colliders": [state.names[k] for k in common],
        "possible": [state.names[k] for k in possible], "shielded": shielded})


def _confounder(state: EpisodeState, args: QueryArgs) -> ToolResult:
    graph, label, i, j = _query_graph(state, args)
    directed = state.directed_matrix(graph)
    found = backdoor_path(directed, i, j)
    x, y = args.x, args.y
    n_undirected = int(np.count_nonzero(np.triu(graph.undirected_adjacency())))
    if found is not None:
        path, top = found
        names = [state.names[k] for k in path]
        shown = names[0]
        for k in range(1, len(names)):
            shown += (" <-- " if k <= top else " --> ") + names[k]
        text = (f"Are {x} and {y} confounded (an open back-door path)? yes: {shown} in "
                f"{label}.")
        answer = "yes"
    else:
        caveat = (f" ({n_undirected} undirected edges in {label} could add back-door paths "
                  "once oriented)") if n_undirected else ""
        text = (f"Are {x} and {y} confounded (an open back-door path)? no: no common cause "
                f"on directed paths in {label}{caveat}.")
        answer = "no"
        names = None
    return ToolResult(text=text, data={"answer": answer, "path": names})


# ---- registration ---------------------------------------------------------------------------------

def _pair_args(state: EpisodeState, i: int, j: int) -> dict:
    return {"x": state.names[i], "y": state.names[j]}


register_tool(Tool(
    name="show_graph",
    description="Show the working graph (or a saved graph) as an edge list. "
                "Edges read 'X1 --> X2' (X1 causes X2) or 'X1 --- X2' (undirected).",
    args_model=ShowGraphArgs, run=_show_graph, category="graph edit"))
register_tool(Tool(
    name="add_edge",
    description="Add an edge to the working graph: x --> y (directed=true, the default) or "
                "x --- y (directed=false). The pair must not be adjacent yet.",
    args_model=AddEdgeArgs, run=_add_edge, category="graph edit", edits_graph=True,
    rl=RLSpec("add", "unordered",
              make_args=lambda s, i, j: {**_pair_args(s, i, j), "directed": False},
              apply=lambda s, i, j: add_edge_at(s, i, j, False))))
register_tool(Tool(
    name="remove_edge",
    description="Remove the edge between x and y from the working graph.",
    args_model=PairArgs, run=_remove_edge, category="graph edit", edits_graph=True,
    rl=RLSpec("remove", "unordered", make_args=_pair_args, apply=remove_edge_at)))
register_tool(Tool(
    name="orient_edge",
    description="Make the existing edge between x and y the directed edge x --> y.",
    args_model=PairArgs, run=_orient_edge, category="graph edit", edits_graph=True,
    rl=RLSpec("orient", "ordered", make_args=_pair_args, apply=orient_edge_at)))
register_tool(Tool(
    name="reverse_edge",
    description="Reverse the directed edge between x and y (x --> y becomes y --> x, and "
                "the other way round).",
    args_model=PairArgs, run=_reverse_edge, category="graph edit", edits_graph=True))
register_tool(Tool(
    name="set_graph",
    description="Replace the whole working graph by a list of edges such as "
                "[\"X1 --> X2\", \"X3 --- X4\"].",
    args_model=SetGraphArgs, run=_set_graph, category="graph edit", edits_graph=True))
register_tool(Tool(
    name="submit",
    description="Submit the working graph as the answer; this ends the episode. Optionally "
                "pass the final graph as `edges` (as in set_graph) to replace the working "
                "graph and submit in one step.",
    args_model=SubmitArgs, run=_submit, category="graph edit", edits_graph=True,
    rl=RLSpec("submit", "none", make_args=lambda s, i, j: {}), tasks=("graph",),
    ends_episode=True))
register_tool(Tool(
    name="save_graph",
    description="Save a copy of the working graph in the graph memory under a name.",
    args_model=GraphNameArgs, run=_save_graph, category="memory", writes_memory=True))
register_tool(Tool(
    name="load_graph",
    description="Replace the working graph by a saved graph (from save_graph or from "
                "run_algorithm(..., save_as=name)).",
    args_model=LoadGraphArgs, run=_load_graph, category="memory", edits_graph=True))
register_tool(Tool(
    name="list_graphs",
    description="List the graphs saved in the graph memory.",
    args_model=NoArgs, run=_list_graphs, category="memory"))
register_tool(Tool(
    name="direct_cause",
    description="Is x a direct cause of y in the working graph (or a saved graph)? "
                "Answers yes, no, or undetermined for an undirected edge.",
    args_model=QueryArgs, run=_direct_cause, category="query"))
register_tool(Tool(
    name="collider",
    description="Do x and y have a common effect x --> z <-- y (a collider) in the working "
                "graph (or a saved graph)?",
    args_model=QueryArgs, run=_collider, category="query"))
register_tool(Tool(
    name="confounder",
    description="Are x and y confounded: is there an open back-door path x <-- ... --> y "
                "in the working graph (or a saved graph)?",
    args_model=QueryArgs, run=_confounder, category="query"))
