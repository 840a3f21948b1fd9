"""The hidden record: what the agent never sees of an instance — the DAG and CPDAG, every
node's mechanism, the graph model and the SCM itself — and the errors of asking a data table
(which has no SCM, and may have no graph) for them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from heuresis_env.errors import HeuresisError
from heuresis_env.generation.scm import SCM
from heuresis_env.graphs import Graph, GraphType, cpdag_from_dag

__all__ = ["HiddenRecord", "NoGroundTruthError", "NoSCMError"]


class NoSCMError(HeuresisError):
    """Something needs the structural causal model behind the data, and the instance (a data
    table) has none."""


class NoGroundTruthError(HeuresisError):
    """Something needs the true graph, and the instance (a data table given without a graph)
    has none."""


@dataclass(frozen=True)
class HiddenRecord:
    """What the agent never sees: the DAG and CPDAG (named column order), every node's
    mechanism, the graph model, and the SCM itself (for more and interventional samples).

    A data table's record has no SCM and no mechanisms; its ``dag`` is the graph given with
    the table (None without one; a partially directed graph stands as given, and is its own
    ``cpdag``), and ``source`` describes the table (and the original column names when they
    were anonymized).
    """

    dag: Graph | None
    cpdag: Graph | None
    mechanisms: dict[str, dict]
    graph_model: str
    scm: SCM | None = field(default=None, repr=False)
    source: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def has_ground_truth(self) -> bool:
        return self.dag is not None

    def require_scm(self, purpose: str) -> SCM:
        """The SCM, or a :class:`NoSCMError` saying why ``purpose`` is unavailable."""
        if self.scm is None:
            raise NoSCMError(f"{purpose} needs the structural causal model behind the data; "
                             "this instance is a data table, which has none")
        return self.scm

    def require_graph(self, purpose: str) -> Graph:
        """The true graph, or a :class:`NoGroundTruthError` saying why ``purpose`` cannot run."""
        if self.dag is None:
            raise NoGroundTruthError(f"{purpose} needs the true graph; this data table was "
                                     "given without one (no ground truth)")
        return self.dag

    @classmethod
    def from_graph(cls, graph: Graph | None, source: Mapping[str, Any]) -> HiddenRecord:
        """The record of a data table: its graph (or None) and a description, no SCM."""
        cpdag = None
        if graph is not None:
            cpdag = cpdag_from_dag(graph) if graph.graph_type() == GraphType.DAG else graph
        return cls(dag=graph, cpdag=cpdag, mechanisms={}, graph_model="data", scm=None,
                   source=dict(source))

    @classmethod
    def from_scm(cls, scm: SCM, graph_model: str) -> HiddenRecord:
        dag = scm.graph()
        return cls(dag=dag, cpdag=cpdag_from_dag(dag),
                   mechanisms={name: m.to_dict() for name, m in zip(scm.names, scm.mechanisms,
                                                                    strict=True)},
                   graph_model=graph_model, scm=scm)

    def mechanism_kinds(self) -> dict[str, str]:
        """Column name → mechanism kind."""
        return {name: m["kind"] for name, m in self.mechanisms.items()}

    def to_dict(self) -> dict:
        document = {"dag": None if self.dag is None else self.dag.to_dict(),
                    "cpdag": None if self.cpdag is None else self.cpdag.to_dict(),
                    "graph_model": self.graph_model,
                    "scm": None if self.scm is None else self.scm.to_dict()}
        if self.source:
            document["source"] = dict(self.source)
        return document

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HiddenRecord:
        """Rebuild a record, checking that its DAG, CPDAG and SCM agree."""
        if data.get("graph_model") == "data":
            try:
                graph = None if data.get("dag") is None else Graph.from_dict(data["dag"])
            except (TypeError, ValueError) as exc:
                raise HeuresisError(f"bad hidden record: {exc}") from None
            return cls.from_graph(graph, data.get("source") or {})
        try:
            scm = SCM.from_dict(data["scm"])
            record = cls.from_scm(scm, str(data["graph_model"]))
            dag, cpdag = Graph.from_dict(data["dag"]), Graph.from_dict(data["cpdag"])
        except (KeyError, TypeError, ValueError) as exc:
            raise HeuresisError(f"bad hidden record: {exc}") from None
        if dag != record.dag or cpdag != record.cpdag:
            raise HeuresisError("the record's DAG or CPDAG does not match its SCM")
        return record
