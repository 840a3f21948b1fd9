"""One self-contained HTML page: every figure embedded as a base64 ``data:`` URI, the style
inline, no script and no external asset, so the page can be mailed or archived as one file.
Sections (configuration, warnings) are folded ``<details>`` elements; table cells link to the
trace viewer when the report was given one."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from heuresis_env.reports.document import (
    BulletList,
    Document,
    FigureBlock,
    Heading,
    Paragraph,
    Section,
    TableBlock,
)

_STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #ddd; padding-bottom: .3em; }
h2 { border-bottom: 1px solid #eee; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0 .3em; font-size: 13px; }
caption { caption-side: top; text-align: left; font-weight: 600; padding: .3em 0; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; }
td:first-child, th:first-child, td:nth-child(2) { text-align: left; }
tr:nth-child(even) td { background: #fafafa; }
.note { color: #555; font-size: 12px; margin: .2em 0; }
figure { margin: 1em 0; }
figcaption { color: #555; font-size: 13px; }
img { max-width: 100%; border: 1px solid #eee; }
.table-wrap { overflow-x: auto; }
td a { color: inherit; text-decoration: none; border-bottom: 1px dotted #88a; }
td a:hover { color: #1f5fa8; }
details { margin: 1.5em 0; border-top: 1px solid #eee; }
details > summary { cursor: pointer; font-size: 1.3em; font-weight: 600; padding: .4em 0; }
details.warnings > summary { font-size: 1em; color: #a15c00; }
"""


def image_data_uri(path: Path) -> str:
    """A PNG file as a ``data:image/png;base64,…`` URI."""
    data = Path(path).read_bytes()
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _cell(text: str, link: str | None) -> str:
    escape = html.escape
    if link:
        return f'<td><a href="{escape(link)}">{escape(text)}</a></td>'
    return f"<td>{escape(text)}</td>"


def _blocks_html(blocks) -> list[str]:
    escape = html.escape
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, Section):
            css = ' class="warnings"' if block.title.lower().startswith("warning") else ""
            parts.append(f"<details{css}{' open' if block.open else ''}>"
                         f"<summary>{escape(block.title)}</summary>")
            parts += _blocks_html(block.blocks)
            parts.append("</details>")
        elif isinstance(block, Heading):
            level = min(max(2, block.level), 6)
            parts.append(f"<h{level}>{escape(block.text)}</h{level}>")
        elif isinstance(block, Paragraph):
            parts.append(f"<p>{escape(block.text)}</p>")
        elif isinstance(block, BulletList):
            items = "".join(f"<li>{escape(item)}</li>" for item in block.items)
            parts.append(f"<ul>{items}</ul>")
        elif isinstance(block, TableBlock):
            table = block.table
            head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
            links = table.links or [[None] * len(row) for row in table.rows]
            body = "".join("<tr>" + "".join(_cell(c, link) for c, link in zip(
                row, row_links, strict=True)) + "</tr>"
                for row, row_links in zip(table.rows, links, strict=True))
            parts.append(f'<div class="table-wrap"><table id="{escape(table.key)}">'
                         f"<caption>{escape(table.title)}</caption><thead><tr>{head}</tr>"
                         f"</thead><tbody>{body}</tbody></table></div>")
            parts += [f'<p class="note">{escape(note)}</p>' for note in table.notes]
        elif isinstance(block, FigureBlock):
            parts.append(f'<figure><img src="{image_data_uri(block.path)}" '
                         f'alt="{escape(block.caption)}"><figcaption>{escape(block.caption)}'
                         "</figcaption></figure>")
    return parts


def to_html(document: Document) -> str:
    """The whole document as one HTML page (UTF-8; no external references but the viewer
    links)."""
    escape = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             f"<title>{escape(document.title)}</title>", f"<style>{_STYLE}</style>", "</head>",
             "<body>", f"<h1>{escape(document.title)}</h1>"]
    parts += _blocks_html(document.blocks)
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"
