"""Tables printed on the console: one helper, so every command's table is laid out the same
way (each column as wide as its widest cell, numbers right-aligned, names left-aligned).

The cells are text the caller formatted (``f"{f1:.3f}"``, ``"-"`` for a missing value); the
helper only lays them out. Report tables (Markdown and HTML) are
:class:`heuresis_env.reports.tables.Table`; tool outputs are the environment's own text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def text_table(header: Sequence[str], rows: Sequence[Sequence[Any]], *,
               align: str | None = None, indent: str = "", gap: str = "  ") -> str:
    """The rows under the header, columns separated by ``gap``, each line prefixed by
    ``indent``. ``align`` has one character per column, ``<`` (left) or ``>`` (right);
    by default the first column is left-aligned and the others right-aligned. The last column
    is not padded when left-aligned (no trailing spaces)."""
    columns = len(header)
    align = align if align is not None else "<" + ">" * (columns - 1)
    if len(align) != columns or set(align) - {"<", ">"}:
        raise ValueError(f"align needs one of '<' or '>' per column ({columns}), got {align!r}")
    cells = [[str(c) for c in header]]
    for row in rows:
        if len(row) != columns:
            raise ValueError(f"a row of {len(row)} cells for {columns} columns: {row!r}")
        cells.append(["" if c is None else str(c) for c in row])
    widths = [max(len(line[k]) for line in cells) for k in range(columns)]
    lines = []
    for line in cells:
        parts = [f"{cell:{side}{width}}" for cell, side, width in zip(line, align, widths,
                                                                       strict=True)]
        lines.append((indent + gap.join(parts)).rstrip())
    return "\n".join(lines)
