"""The report as a list of blocks (headings, paragraphs, tables, figures), rendered once to
Markdown here and once to HTML by :mod:`heuresis_env.reports.html`, so the two agree."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from heuresis_env.reports.tables import Table


@dataclass
class Heading:
    text: str
    level: int = 2


@dataclass
class Paragraph:
    text: str


@dataclass
class BulletList:
    items: list[str]


@dataclass
class TableBlock:
    table: Table


@dataclass
class FigureBlock:
    path: Path          # the PNG on disk
    caption: str


@dataclass
class Section:
    """A titled group of blocks that the HTML page shows folded (``<details>``): the
    configuration and the warnings, kept out of the reader's way."""

    title: str
    blocks: list = field(default_factory=list)
    open: bool = False


Block = Heading | Paragraph | BulletList | TableBlock | FigureBlock | Section


@dataclass
class Document:
    title: str
    blocks: list[Block] = field(default_factory=list)

    def add(self, block: Block) -> None:
        self.blocks.append(block)

    def flat_blocks(self) -> list[Block]:
        """Every block, those inside sections included, in reading order."""
        out: list[Block] = []
        for block in self.blocks:
            out.append(block)
            if isinstance(block, Section):
                out += block.blocks
        return out

    def tables(self) -> list[Table]:
        return [b.table for b in self.flat_blocks() if isinstance(b, TableBlock)]

    def figures(self) -> list[FigureBlock]:
        return [b for b in self.flat_blocks() if isinstance(b, FigureBlock)]


def to_markdown(document: Document, base: Path) -> str:
    """The document as Markdown; figure links are relative to ``base`` (the report folder)."""
    lines = [f"# {document.title}", ""]
    for block in document.blocks:
        if isinstance(block, Section):
            lines += [f"## {block.title}", ""]
            lines += _markdown_blocks(block.blocks, base)
        else:
            lines += _markdown_blocks([block], base)
    return "\n".join(lines).rstrip() + "\n"


def _markdown_blocks(blocks: list[Block], base: Path) -> list[str]:
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            lines += [f"{'#' * max(2, block.level)} {block.text}", ""]
        elif isinstance(block, Paragraph):
            lines += [block.text, ""]
        elif isinstance(block, BulletList):
            lines += [f"- {item}" for item in block.items] + [""]
        elif isinstance(block, TableBlock):
            table = block.table
            lines += [f"**{table.title}**", "", table.to_markdown(), ""]
            lines += [f"_{note}_" for note in table.notes]
            if table.notes:
                lines.append("")
        elif isinstance(block, FigureBlock):
            relative = Path(block.path).resolve().relative_to(Path(base).resolve())
            lines += [f"![{block.caption}]({relative.as_posix()})", "", f"_{block.caption}_", ""]
    return lines
