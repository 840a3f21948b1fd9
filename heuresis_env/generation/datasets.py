"""Data tables as instances: a user's CSV, or the shipped Sachs et al. (2005) data.

A data-table instance is the table itself (n × d, optionally standardized and anonymized) with
a hidden record that holds the graph given with it (a consensus graph, a user's edge list) or
none, and never an SCM: there is no generator behind real data, so whatever needs one (more
samples, interventions, true effects) says so (:class:`~.instances.NoSCMError`), and without a
graph an episode still runs and ends with the submitted graph and no score.

A table registered under a name (:func:`register_dataset`) works wherever a family name does
(``gym.make``, ``heuresis evaluate``, ``heuresis baselines``): it has one instance, index 0,
the same in both splits. ``sachs`` is registered on import: the 853 observational CD3/CD28
rows of the 11 proteins, anonymized and standardized, scored against the 17-arc consensus
graph (``heuresis_env/data/README.md`` says where every file comes from).
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.data import data_sha256
from heuresis_env.errors import DataError, HeuresisError
from heuresis_env.generation.instances import (
    MIN_ROWS,
    Instance,
    InstanceKey,
    InstanceSource,
    register_source,
)
from heuresis_env.generation.record import HiddenRecord
from heuresis_env.generation.structures import bnlearn_structure
from heuresis_env.graphs import Graph, GraphError, graph_from_edge_lines, has_directed_cycle

#: what a kept column name must look like (the tools' edge syntax reads identifiers)
NAME_PATTERN = re.compile(r"[A-Za-z_][\w.]*")
MAX_NAME_CHARS = 64
#: cells read as missing values
MISSING_CELLS = frozenset({"", "na", "nan", "n/a", "null", "none", "?", "."})
SACHS_ROWS, SACHS_COLUMNS = 853, 11


class DatasetError(DataError):
    """A table or graph file that cannot become an instance (the message names the problem)."""


# ---- reading and checking a table -------------------------------------------------------------

def _table_rows(path: str | os.PathLike) -> tuple[list[str], list[list[str]]]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise DatasetError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read {path} as UTF-8 text: {exc}") from None
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = [row for row in csv.reader(io.StringIO(text), dialect)
                if any(c.strip() for c in row)]
    except csv.Error as exc:  # a binary file that happens to decode (NUL bytes, say)
        raise DatasetError(f"{path} is not a CSV table ({exc}); expected a header row of "
                           "column names and one row of numbers per sample") from None
    if not rows:
        raise DatasetError(f"{path} is empty; expected a header row of column names and one "
                           "row per sample")
    header = [c.strip() for c in rows[0]]
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise DatasetError(f"{path}, line {number}: {len(row)} fields, but the header has "
                               f"{len(header)} columns")
    return header, rows[1:]


def _numeric_columns(header: Sequence[str], rows: Sequence[Sequence[str]], where: str
                     ) -> np.ndarray:
    """The cells as floats; every column with missing or non-numeric cells is named."""
    values = np.empty((len(rows), len(header)), dtype=np.float64)
    missing: dict[str, list[int]] = {}
    non_numeric: dict[str, tuple[int, str]] = {}
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            text = cell.strip()
            if text.lower() in MISSING_CELLS:
                missing.setdefault(header[c], []).append(r + 2)
                continue
            try:
                value = float(text)
            except ValueError:
                non_numeric.setdefault(header[c], (r + 2, text))
                continue
            if not math.isfinite(value):
                non_numeric.setdefault(header[c], (r + 2, text))
                continue
            values[r, c] = value
    problems = []
    if missing:
        problems.append("missing values in column(s) " + ", ".join(
            f"{name!r} ({len(lines)}, first on line {lines[0]})" for name, lines in
            missing.items()) + " — drop or impute them first")
    if non_numeric:
        problems.append("non-numeric column(s) " + ", ".join(
            f"{name!r} (line {line}: {text[:20]!r})" for name, (line, text) in
            non_numeric.items()) + " — encode or drop them (every column must be a number)")
    if problems:
        raise DatasetError(f"{where}: " + "; ".join(problems))
    return values


def check_table(X: Any, names: Sequence[str] | None = None, where: str = "the table"
                ) -> tuple[np.ndarray, tuple[str, ...]]:
    """A numeric n × d table and its column names, checked: at least 2 columns and
    ``MIN_ROWS`` rows, finite numbers, unique names, no constant column (each named)."""
    try:
        X = np.array(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"{where} must be a numeric n × d array: {exc}") from None
    if X.ndim != 2 or X.shape[1] < 2 or X.shape[0] < MIN_ROWS:
        raise DatasetError(f"{where} must be a 2-D table with at least 2 columns and "
                           f"{MIN_ROWS} rows, got shape {X.shape}")
    names = tuple(f"X{i + 1}" for i in range(X.shape[1])) if names is None else tuple(
        str(n).strip() for n in names)
    if len(names) != X.shape[1]:
        raise DatasetError(f"{where} has {X.shape[1]} columns but {len(names)} names")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise DatasetError(f"{where}: duplicate column name(s) {duplicates}")
    bad = [names[j] for j in range(X.shape[1]) if not np.all(np.isfinite(X[:, j]))]
    if bad:
        raise DatasetError(f"{where}: missing or non-finite values in column(s) {bad}")
    constant = [names[j] for j in range(X.shape[1]) if np.ptp(X[:, j]) == 0]
    if constant:
        raise DatasetError(f"{where}: constant column(s) {constant} carry no information "
                           "(and break the independence tests); drop them")
    return X, names


def _check_names(names: Sequence[str], where: str) -> None:
    bad = [n for n in names if not NAME_PATTERN.fullmatch(n) or len(n) > MAX_NAME_CHARS]
    if bad:
        raise DatasetError(
            f"{where}: column name(s) {bad} cannot be used as variable names (letters, digits, "
            f"'_' and '.', not starting with a digit, at most {MAX_NAME_CHARS} characters); "
            "rename them, or pass anonymize=True (--anonymize) to call the columns X1..Xd")


def read_table(path: str | os.PathLike) -> tuple[np.ndarray, tuple[str, ...]]:
    """A CSV file (header row of column names; ',', ';' or tab) as a checked float table."""
    header, rows = _table_rows(path)
    values = _numeric_columns(header, rows, str(path))
    return check_table(values, header, str(path))


def read_graph(source: str | os.PathLike | Iterable[str] | Graph,
               names: Sequence[str]) -> Graph:
    """A graph over ``names``: a :class:`Graph`, an edge-list file, or its lines.

    One edge a line (``A --> B`` or ``A --- B``, the syntax the tools print; ``#`` starts a
    comment). Directed edges must not form a cycle.
    """
    if isinstance(source, Graph):
        graph = source
        if set(graph.names) != set(names):
            raise DatasetError(f"the graph's variables {sorted(graph.names)} differ from the "
                               f"table's columns {sorted(names)}")
        graph = graph.restricted(list(names))
        where = "the graph"
    else:
        if isinstance(source, str | os.PathLike):
            where = str(source)
            try:
                lines = Path(source).read_text(encoding="utf-8").splitlines()
            except FileNotFoundError:
                raise DatasetError(f"no such graph file: {source}") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise DatasetError(f"cannot read the graph file {source}: {exc}") from None
        else:
            where, lines = "the graph", list(source)
        try:
            graph = graph_from_edge_lines(names, lines, where=where)
        except GraphError as exc:
            raise DatasetError(str(exc)) from None
    if has_directed_cycle(graph.directed_adjacency()):
        raise DatasetError(f"{where}: the directed edges form a cycle; a causal graph here "
                           "is a DAG (or a CPDAG with '---' for unoriented edges)")
    if any(not (e.is_directed or e.is_undirected) for e in graph.edges()):
        raise DatasetError(f"{where}: use '-->' and '---' edges only (no PAG marks)")
    return graph


# ---- a table as an instance -------------------------------------------------------------------

def _anonymizing_order(X: np.ndarray) -> np.ndarray:
    """A column permutation seeded by the data's hash (the same table, the same order)."""
    digest = hashlib.sha256(np.ascontiguousarray(X).tobytes()).hexdigest()
    seed = np.random.SeedSequence([int(digest[i:i + 8], 16) for i in range(0, 64, 8)])
    return np.random.Generator(np.random.PCG64(seed)).permutation(X.shape[1])


def dataset_instance(data: Any, names: Sequence[str] | None = None,
                     graph: str | os.PathLike | Iterable[str] | Graph | None = None, *,
                     name: str = "dataset", anonymize: bool = False, standardize: bool = True,
                     split: str = "dev", details: Mapping[str, Any] | None = None) -> Instance:
    """An instance of a data table (see the module docstring).

    ``anonymize`` shuffles the columns (seeded by the data) and names them X1..Xd, as the
    generated families are; the original names stay in the hidden record's ``source``.
    ``standardize`` (the default) scales every column to mean 0 and variance 1 (population
    sd), as the families are. ``graph`` is over the original column names.
    """
    X, original = check_table(data, names)
    if not anonymize:
        _check_names(original, "the table")
    truth = None if graph is None else read_graph(graph, original)
    raw_means = np.array([math.fsum(X[:, j]) / X.shape[0] for j in range(X.shape[1])])
    raw_sds = X.std(axis=0)
    if standardize:
        X = (X - raw_means) / raw_sds
    columns = list(original)
    if anonymize:
        order = _anonymizing_order(X)
        X = X[:, order]
        columns = [f"X{i + 1}" for i in range(X.shape[1])]
        mapping = {columns[k]: original[int(j)] for k, j in enumerate(order)}
        if truth is not None:  # column k holds the original column order[k]
            truth = Graph(columns, truth.restricted([mapping[c] for c in columns]).marks)
    else:
        mapping = {c: c for c in columns}
    X = np.ascontiguousarray(X)
    X.flags.writeable = False
    source = {"name": name, "anonymized": bool(anonymize), "standardized": bool(standardize),
              "columns": mapping, "raw_means": dict(zip(original, raw_means.tolist())),
              "raw_sds": dict(zip(original, raw_sds.tolist())), **dict(details or {})}
    key = InstanceKey(name, split, 0, d=X.shape[1], n=X.shape[0], graph_model="data")
    return Instance(key=key, X=X, names=tuple(columns), sha256=data_sha256(X),
                    record=HiddenRecord.from_graph(truth, source))


def public_description(instance: Instance) -> str:
    """What an agent may know about a data table (how its columns were prepared), or ''."""
    source = instance.record.source
    if instance.record.graph_model != "data":
        return ""
    parts = ["The table is real (or user-supplied) data, not a simulation."]
    parts.append("Every column is standardized (mean 0, variance 1)." if source.get(
        "standardized") else "The columns hold the values as given (not standardized).")
    parts.append("The columns were renamed X1..Xd in random order, so names and order carry "
                 "no information." if source.get("anonymized") else
                 "The columns keep the names they were given.")
    return " ".join(parts)


def load_dataset(path: str | os.PathLike,
                 graph: str | os.PathLike | Iterable[str] | Graph | None = None, *,
                 anonymize: bool = False, standardize: bool = True, name: str | None = None
                 ) -> Instance:
    """A CSV file (header row of column names) as an instance, with an optional edge-list graph
    over those names; bad cells are refused with the columns named (see :func:`read_table`)."""
    X, names = read_table(path)
    path = Path(path)
    details = {"path": str(path.resolve()), "file_sha256": _file_sha256(path)}
    if isinstance(graph, str | os.PathLike):
        details["graph_path"] = str(Path(graph).resolve())
    return dataset_instance(X, names, graph, name=name or dataset_name(path),
                            anonymize=anonymize, standardize=standardize, details=details)


def dataset_name(path: str | os.PathLike) -> str:
    """The name a CSV file is registered under: ``table-<file stem>`` (cleaned)."""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", Path(path).stem).strip("-_") or "data"
    return f"table-{stem}"


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- registering tables under a name ------------------------------------------------------------

def register_instance(instance: Instance, description: str = "",
                      details: Mapping[str, Any] | None = None) -> InstanceSource:
    """Register a data-table instance under its key's family name (replacing any table of
    that name), so the name works wherever a family's does."""
    if instance.record.graph_model != "data":
        raise HeuresisError("register_instance takes a data-table instance (dataset_instance, "
                            "load_dataset); generated families are registered as families")

    def load(key: InstanceKey) -> Instance:
        if (key.d, key.n, key.graph_model) != (instance.d, instance.n, "data"):
            raise HeuresisError(
                f"data set {instance.key.family!r} has {instance.d} columns and {instance.n} "
                f"rows; the key asks for d = {key.d}, n = {key.n} ({key.graph_model})")
        return instance if key == instance.key else replace(instance, key=key)

    return register_source(InstanceSource(instance.key.family, instance.d, instance.n, load,
                                          description, dict(details or {})))


def register_dataset(path: str | os.PathLike, graph: str | os.PathLike | None = None, *,
                     anonymize: bool = False, standardize: bool = True,
                     name: str | None = None) -> InstanceSource:
    """Load a CSV (:func:`load_dataset`) and register it; the source's ``details`` record the
    file, its hash and the options, so another process can register the same table again
    (:func:`register_from_details`)."""
    instance = load_dataset(path, graph, anonymize=anonymize, standardize=standardize,
                            name=name)
    details = dataset_details(instance)
    return register_instance(instance, f"data table {details['path']}", details)


def dataset_details(instance: Instance) -> dict[str, Any]:
    """What rebuilds a registered CSV table elsewhere: name, paths, hashes, options."""
    source = instance.record.source
    return {"name": instance.key.family, "path": source.get("path"),
            "graph": source.get("graph_path"), "file_sha256": source.get("file_sha256"),
            "anonymize": bool(source.get("anonymized")),
            "standardize": bool(source.get("standardized")), "sha256": instance.sha256}


def register_from_details(details: Mapping[str, Any]) -> InstanceSource:
    """Register a CSV table again from :func:`dataset_details` (in a worker, or for a report),
    checking that the file still holds the same data."""
    source = register_dataset(details["path"], details.get("graph"),
                              anonymize=bool(details.get("anonymize")),
                              standardize=bool(details.get("standardize", True)),
                              name=str(details["name"]))
    if details.get("sha256") and source.details.get("sha256") != details["sha256"]:
        raise DatasetError(f"{details['path']} no longer holds the table {details['name']!r} "
                           "was made from (its data hash differs)")
    return source


# ---- the shipped Sachs et al. (2005) data -------------------------------------------------------

def sachs_table() -> tuple[np.ndarray, tuple[str, ...]]:
    """The shipped observational CD3/CD28 rows (853 × 11, raw intensities, protein names)."""
    path = resources.files("heuresis_env") / "data" / "sachs" / "sachs_cd3cd28.csv"
    with resources.as_file(path) as local:
        return read_table(local)


def sachs_consensus_graph() -> Graph:
    """The 17-arc consensus graph of Sachs et al. (2005), as the BNLearn repository has it."""
    return bnlearn_structure("sachs").graph()


def _load_sachs(key: InstanceKey) -> Instance:
    X, names = sachs_table()
    if X.shape != (SACHS_ROWS, SACHS_COLUMNS):
        raise DatasetError(f"the shipped Sachs table has shape {X.shape}, expected "
                           f"({SACHS_ROWS}, {SACHS_COLUMNS}); the package data is damaged")
    return dataset_instance(X, names, sachs_consensus_graph(), name="sachs", anonymize=True,
                            standardize=True, split=key.split,
                            details={"reference": "Sachs et al. (2005), Science 308:523-529; "
                                                  "observational CD3/CD28 condition"})


register_source(InstanceSource(
    "sachs", SACHS_COLUMNS, SACHS_ROWS, _load_sachs,
    "Sachs et al. (2005): 853 observational CD3/CD28 cells × 11 proteins, anonymized and "
    "standardized; scored against the 17-arc consensus graph"))




# ---- the Tübingen cause-effect pairs (names and truth only) -------------------------------------

def tuebingen_pairs(usable_only: bool = True) -> list[dict[str, str]]:
    """The pairs of the Tübingen cause-effect database v1.0: ``pair``, ``var1``, ``var2``,
    ``truth`` (``->``: var1 causes var2; ``<-``: var2 causes var1), ``dataset``, ``status``.

    ``usable_only`` keeps the 99 pairs with two different descriptions and a ground truth
    (status ``ok``); the others are multivariate, without truth, or share one description.
    """
    path = resources.files("heuresis_env") / "data" / "tuebingen" / "pairs.tsv"
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")), delimiter="\t"))
    return [r for r in rows if r["status"] == "ok"] if usable_only else rows


def one_instance_note(names: Sequence[str]) -> str:
    """What a reader of a run or report on data tables should know (``heuresis evaluate``'s
    note, the report's warning): a table is one instance, so its score has no interval over
    instances and no salt seals it; and how to get an interval."""
    which = (f"{names[0]} is a data table" if len(names) == 1
             else f"{', '.join(names)} are data tables")
    return (f"{which}: one table is one instance, so its score has no interval over instances "
            "(and the test salt does not apply to tables); for an interval, report several "
            "tables together (one 'heuresis evaluate --dataset' run each: 'heuresis report' "
            "puts them in one arm, its 'all' column over the tables) or a family's instances "
            "(--family)")


__all__: Sequence[str] = (
    "DatasetError", "check_table", "dataset_details", "dataset_instance", "dataset_name",
    "one_instance_note",
    "load_dataset", "public_description", "read_graph", "read_table", "register_dataset",
    "register_from_details", "register_instance", "sachs_consensus_graph", "sachs_table",
    "tuebingen_pairs",
)
