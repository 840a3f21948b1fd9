"""Known causal structures: fixed DAGs a family can draw its mechanisms on (the BNLearn networks).

A :class:`Structure` is a named DAG (variable names and arcs). A family with a structure
(:class:`heuresis_env.generation.families.FamilySpec` ``structure=...``) uses it instead of a
random graph; the instance generator then shuffles the columns and renames them X1..Xd as for
every family, so the original names never reach the data. Eleven BNLearn networks ship as
edge lists in ``heuresis_env/data/bnlearn/`` (graphs only; see ``heuresis_env/data/README.md``
for their sources and licence): the seven of the benchmark's appendix
(:data:`BNLEARN_NETWORKS`, d = 5–37) and four larger ones (:data:`BNLEARN_LARGE_NETWORKS`,
d = 56–223). Each is registered as the family ``bnlearn-<network>``: linear-Gaussian mechanisms
(the ``lg`` family's) on the fixed anonymized DAG.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.graphs import Graph, GraphError, graph_from_edge_lines, has_directed_cycle

#: the seven networks of the benchmark's appendix, smallest first
BNLEARN_NETWORKS = ("asia", "cancer", "earthquake", "sachs", "child", "insurance", "alarm")
#: four larger networks: hailfinder (56 nodes), hepar2 (70), win95pts (76), andes (223)
BNLEARN_LARGE_NETWORKS = ("hailfinder", "hepar2", "win95pts", "andes")
#: every shipped BNLearn network (the shelf), smallest first
BNLEARN_SHELF = (*BNLEARN_NETWORKS, *BNLEARN_LARGE_NETWORKS)
#: the family name of a BNLearn network
BNLEARN_PREFIX = "bnlearn-"
_NODES_HEADER = "# nodes:"


@dataclass(frozen=True)
class Structure:
    """A named DAG: ``names`` in file order and ``edges`` as (parent, child) pairs."""

    name: str
    names: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(str(n) for n in self.names))
        object.__setattr__(self, "edges", tuple((str(a), str(b)) for a, b in self.edges))
        if len(self.names) < 2:
            raise HeuresisError(f"structure {self.name!r} needs at least two variables")
        graph = Graph.from_edges(self.names, self.edges)  # unknown names, loops, duplicates
        if len(graph.edges()) != len(self.edges) or has_directed_cycle(graph.directed_adjacency()):
            raise HeuresisError(f"structure {self.name!r} must be a DAG with each arc once")

    @property
    def d(self) -> int:
        return len(self.names)

    def adjacency(self) -> np.ndarray:
        """Boolean adjacency in ``names`` order (``[i, j]`` for names[i] → names[j])."""
        index = {n: i for i, n in enumerate(self.names)}
        adjacency = np.zeros((self.d, self.d), dtype=bool)
        for parent, child in self.edges:
            adjacency[index[parent], index[child]] = True
        return adjacency

    def graph(self) -> Graph:
        return Graph.from_edges(self.names, self.edges)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "names": list(self.names),
                "edges": [list(e) for e in self.edges], "source": self.source}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Structure:
        try:
            return cls(str(data["name"]), tuple(data["names"]),
                       tuple(tuple(e) for e in data["edges"]), str(data.get("source", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise HeuresisError(f"bad structure {dict(data)!r}: {exc}") from None


def parse_structure(name: str, lines: Iterable[str], source: str = "") -> Structure:
    """A structure from an edge-list file: a ``# nodes: A B C`` header line, then
    ``parent --> child`` lines (other ``#`` lines are comments)."""
    lines = list(lines)
    headers = [line for line in lines if line.startswith(_NODES_HEADER)]
    if len(headers) != 1:
        raise HeuresisError(f"structure file {name!r} needs one '{_NODES_HEADER} ...' line "
                            "listing every node")
    names = headers[0][len(_NODES_HEADER):].split()
    try:
        graph = graph_from_edge_lines(names, lines, where=f"structure {name!r}")
    except GraphError as exc:
        raise HeuresisError(str(exc)) from None
    edges = [(e.u, e.v) for e in graph.edges()]
    if any(not e.is_directed for e in graph.edges()):
        raise HeuresisError(f"structure {name!r} must list directed arcs only ('A --> B')")
    return Structure(name, tuple(names), tuple(edges), source)


def bnlearn_structure(network: str) -> Structure:
    """One of the shipped BNLearn graphs (original names), e.g. ``bnlearn_structure("alarm")``."""
    if network not in BNLEARN_SHELF:
        raise UnknownNameError("BNLearn network", network, BNLEARN_SHELF)
    path = resources.files("heuresis_env") / "data" / "bnlearn" / f"{network}.txt"
    text = path.read_text(encoding="utf-8")
    return parse_structure(network, text.splitlines(),
                           source=f"BNLearn '{network}' (heuresis_env/data/bnlearn)")


def bnlearn_family(network: str) -> str:
    """The family name of a BNLearn network (``alarm`` → ``bnlearn-alarm``)."""
    return f"{BNLEARN_PREFIX}{network}"


__all__: Sequence[str] = ("BNLEARN_LARGE_NETWORKS", "BNLEARN_NETWORKS", "BNLEARN_SHELF", "Structure", "bnlearn_family",
                          "bnlearn_structure", "parse_structure")
