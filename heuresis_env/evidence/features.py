"""Evidence features declared once: blocks that compute named arrays, and the channel order,
the checks and the text tables derived from the declarations.

A table of evidence — the pair statistics (:mod:`.statistics`), the evidence grid
(:mod:`.grid`), the repair table (:mod:`.repair`) — declares each feature once, in the
:class:`FeatureBlock` that computes it: a block names its pair features and its node features
and returns them as named arrays. The rest derives from the declarations: the arrays' channel
order (the blocks' features in block order, after the names whose order a shipped model fixed:
:func:`channel_order`), the check that a block returns exactly what it declares and the CPU
and wall seconds of each block (:func:`run_blocks`), the stacked arrays (:func:`stack`) and
the text table a tool shows (a feature with a :class:`TextColumn` is a column of it, in
channel order: :func:`table_lines`, :func:`grid_table`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np

from heuresis_env.discovery.regression import normal_scores
from heuresis_env.errors import HeuresisError


class TableRow(NamedTuple):
    """One row of a text table: the table's object (its names, settings, other columns) and
    the row's index in it (a pair (i, j), a variable k or a row number)."""

    owner: Any
    index: Any


def _as_is(value: Any, row: TableRow) -> Any:
    return value


@dataclass(frozen=True)
class TextColumn:
    """A feature's column in its table's text: the header and a cell template (a
    :meth:`str.format` template), each with its leading spaces, so the tables keep the aligned
    layout the tools print; the template formats ``show(value, row)`` of each of the cell's
    values (an ordered feature of a d × d grid has two: i → j and j → i). A callable header
    reads the table's object (a column whose header depends on its settings)."""

    header: str | Callable[[Any], str]
    cell: str
    show: Callable[[Any, TableRow], Any] = _as_is

    def header_text(self, owner: Any) -> str:
        return self.header(owner) if callable(self.header) else self.header


@dataclass(frozen=True)
class GridFeature:
    """A feature of a d × d grid: cell ``[i, j]`` of a pair feature (a *symmetric* one is
    equal in both cells, an ordered one is about i → j), or a node feature; ``column`` its
    place in the table's text (None: not shown, or the table's default)."""

    name: str
    symmetric: bool
    description: str
    column: TextColumn | None = None


@dataclass(frozen=True)
class FeatureBlock:
    """A group of features computed together: ``compute(context)`` returns a dict of every
    declared feature's array ((d, d) for a pair feature of a grid, (d,) for a node feature, one
    value per row for a row of the repair table); ``search`` marks a block that runs a search
    algorithm (left out on request)."""

    name: str
    pair: tuple[Any, ...]
    node: tuple[Any, ...]
    compute: Callable[[Any], dict[str, np.ndarray]]
    search: bool = False


@dataclass
class EvidenceContext:
    """What a table's blocks share: the data, its names and hash, and values derived once."""

    data: np.ndarray
    names: tuple[str, ...]
    sha256: str
    memo: dict[str, Any] = field(default_factory=dict, kw_only=True)

    @property
    def n(self) -> int:
        return int(self.data.shape[0])

    @property
    def d(self) -> int:
        return int(self.data.shape[1])

    @property
    def column(self) -> dict[str, int]:
        """Each variable's column."""
        return self.once("column", lambda: {name: k for k, name in enumerate(self.names)})

    @property
    def scores(self) -> np.ndarray:
        """The columns' normal scores."""
        return self.once("scores", lambda: normal_scores(self.data))

    def once(self, name: str, compute: Callable[[], Any]) -> Any:
        """``compute()``'s value, computed on the first call under ``name``."""
        if name not in self.memo:
            self.memo[name] = compute()
        return self.memo[name]


def channel_order(features: Iterable[Any], frozen: Sequence[str] = ()) -> tuple[Any, ...]:
    """The features in channel order: those named in ``frozen`` first, in its order (the
    order a shipped model reads them in), then the others in declaration order. Raises on a
    name declared twice or a frozen name not declared."""
    declared = tuple(features)
    names = [f.name for f in declared]
    by_name = dict(zip(names, declared, strict=True))
    if len(by_name) != len(declared):
        raise HeuresisError(f"features declared twice: "
                            f"{sorted({name for name in names if names.count(name) > 1})}")
    missing = [name for name in frozen if name not in by_name]
    if missing:
        raise HeuresisError(f"the frozen channel order names undeclared features {missing}")
    placed = set(frozen)
    return (*(by_name[name] for name in frozen),
            *(f for f in declared if f.name not in placed))


def pair_features(blocks: Sequence[FeatureBlock], frozen: Sequence[str] = ()) -> tuple[Any, ...]:
    """The blocks' pair features in channel order (:func:`channel_order`)."""
    return channel_order((f for block in blocks for f in block.pair), frozen)


def node_features(blocks: Sequence[FeatureBlock], frozen: Sequence[str] = ()) -> tuple[Any, ...]:
    """The blocks' node features in channel order (:func:`channel_order`)."""
    return channel_order((f for block in blocks for f in block.node), frozen)


@dataclass(frozen=True)
class BlockValues:
    """What :func:`run_blocks` returns: every feature's array by name, and each block's CPU
    and wall seconds."""

    values: dict[str, np.ndarray]
    cpu_seconds: dict[str, float]
    wall_seconds: dict[str, float]


def run_blocks(blocks: Sequence[FeatureBlock], context: Any, what: str,
               skip: Callable[[FeatureBlock], bool] = lambda block: False) -> BlockValues:
    """Run the blocks in order on ``context`` (those ``skip`` names are left out), each
    checked to return exactly the features it declares (``what`` names the table)."""
    values: dict[str, np.ndarray] = {}
    cpu: dict[str, float] = {}
    wall: dict[str, float] = {}
    for block in blocks:
        if skip(block):
            continue
        started = time.process_time(), time.perf_counter()
        computed = block.compute(context)
        declared = {f.name for f in (*block.pair, *block.node)}
        if set(computed) != declared:
            raise HeuresisError(f"{what} block {block.name!r} returned {sorted(computed)}, "
                                f"declared {sorted(declared)}")
        values.update(computed)
        cpu[block.name] = time.process_time() - started[0]
        wall[block.name] = time.perf_counter() - started[1]
    return BlockValues(values, cpu, wall)


def stack(values: dict[str, np.ndarray], features: Sequence[Any],
          shape: tuple[int, ...]) -> np.ndarray:
    """The features' arrays of ``shape`` stacked on a last axis, in the given order, as
    float64 (zeros for a feature whose block did not run)."""
    if not features:
        return np.zeros((*shape, 0))
    return np.stack([np.broadcast_to(np.asarray(values[f.name], dtype=np.float64), shape)
                     if f.name in values else np.zeros(shape) for f in features], axis=-1)


def table_lines(owner: Any, label_header: str, label: str,
                columns: Sequence[tuple[TextColumn, Callable[[Any], tuple[Any, ...]]]],
                rows: Iterable[tuple[str, Any]]) -> list[str]:
    """A text table: the header (``label_header`` and each column's), then a line per row
    ``(name, index)``: ``label`` formatting the name, then each column's cell of the values
    its function reads at ``index``."""
    lines = [label_header + "".join(column.header_text(owner) for column, _ in columns)]
    for name, index in rows:
        row = TableRow(owner, index)
        lines.append(label.format(name) + "".join(
            column.cell.format(*(column.show(value, row) for value in read(index)))
            for column, read in columns))
    return lines


@dataclass(frozen=True)
class GridLayout:
    """How a d × d grid prints: the pair section's header and label template, the node
    section's, and the column of a feature that declares none (``default(feature, is_pair)``;
    None: such a feature is not shown)."""

    pair_header: str
    pair_label: str
    node_header: str
    node_label: str
    default: Callable[[GridFeature, bool], TextColumn] | None = None


def grid_table(owner: Any, names: Sequence[str], pairs: np.ndarray, nodes: np.ndarray,
               pair_declared: Sequence[GridFeature], node_declared: Sequence[GridFeature],
               layout: GridLayout, chosen: Iterable[tuple[int, int]] | None = None) -> str:
    """A grid as text: a row per unordered pair (``chosen``, or all), each shown feature a
    column (an ordered one as i → j, j → i), a blank line, then a row per variable."""

    def column_of(feature: GridFeature, is_pair: bool) -> TextColumn | None:
        if feature.column is not None or layout.default is None:
            return feature.column
        return layout.default(feature, is_pair)

    def pair_reader(c: int, symmetric: bool) -> Callable[[Any], tuple[Any, ...]]:
        if symmetric:
            return lambda ij: (float(pairs[ij[0], ij[1], c]),)
        return lambda ij: (float(pairs[ij[0], ij[1], c]), float(pairs[ij[1], ij[0], c]))

    def node_reader(c: int) -> Callable[[Any], tuple[Any, ...]]:
        return lambda k: (float(nodes[k, c]),)

    pair_columns = [(column, pair_reader(c, feature.symmetric))
                    for c, feature in enumerate(pair_declared)
                    if (column := column_of(feature, True)) is not None]
    node_columns = [(column, node_reader(c)) for c, feature in enumerate(node_declared)
                    if (column := column_of(feature, False)) is not None]
    chosen = chosen if chosen is not None else itertools.combinations(range(len(names)), 2)
    lines = table_lines(owner, layout.pair_header, layout.pair_label, pair_columns,
                        ((f"{names[i]} - {names[j]}", (i, j)) for i, j in chosen))
    lines.append("")
    lines += table_lines(owner, layout.node_header, layout.node_label, node_columns,
                         ((name, k) for k, name in enumerate(names)))
    return "\n".join(lines)


@dataclass(frozen=True)
class FeatureGrid:
    """One instance's d × d table of declared features: ``pairs[i, j, c]`` is pair feature c
    of (i, j) (the diagonal is 0), ``nodes[i, c]`` node feature c of variable i, ``seconds``
    each block's CPU seconds; a subclass names its features and its text's layout."""

    names: tuple[str, ...]
    sha256: str
    pairs: np.ndarray  # (d, d, len(PAIR_FEATURES)) float32
    nodes: np.ndarray  # (d, len(NODE_FEATURES)) float32
    seconds: dict[str, float] = field(default_factory=dict)

    PAIR_FEATURES: ClassVar[tuple[GridFeature, ...]] = ()
    NODE_FEATURES: ClassVar[tuple[GridFeature, ...]] = ()
    LAYOUT: ClassVar[GridLayout] = GridLayout("pair", "{}", "variable", "{}")

    @property
    def d(self) -> int:
        return len(self.names)

    def pair(self, name: str) -> np.ndarray:
        """The (d, d) matrix of one pair feature."""
        return self.pairs[:, :, [f.name for f in self.PAIR_FEATURES].index(name)]

    def node(self, name: str) -> np.ndarray:
        """The (d,) column of one node feature."""
        return self.nodes[:, [f.name for f in self.NODE_FEATURES].index(name)]

    def text(self, chosen: Iterable[tuple[int, int]] | None = None) -> str:
        """The table as text (:func:`grid_table`, the subclass's layout)."""
        return grid_table(self, self.names, self.pairs, self.nodes, self.PAIR_FEATURES,
                          self.NODE_FEATURES, self.LAYOUT, chosen)
