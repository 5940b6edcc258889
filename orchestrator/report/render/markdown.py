"""The Markdown renderer: fits a CI job summary ($GITHUB_STEP_SUMMARY). Writes out a `page.blocks.Page`; computes nothing.

The same page as the HTML, block for block: tables and verdicts always; charts only as image
links (`charts/<stem>.svg`), written beside the Markdown file by `write_report` when `--output`
names a directory (GitHub renders SVG files referenced by relative path, not data: URIs, so
nothing is inlined). Every piece of text goes through `escape.md_text` (`md_line_start` where it
begins a line); a badge is its label in bold, a muted span in italics. What only a script shows (the dashboard's
filters and plotly charts) is left out; an inline chart is its title.
"""

from __future__ import annotations

from orchestrator.report.escape import html_text, md_line_start, md_text
from orchestrator.report.page.blocks import (
    Block,
    Bullets,
    Figure,
    Filters,
    Grid,
    Page,
    Paragraph,
    Row,
    ScriptChart,
    Section,
    Span,
    Table,
    Text,
)

CHART_DIR = "charts"
_BADGE_MARK = {"bad": "⛔ ", "warn": "⚠ "}


def render_markdown(page: Page, chart_dir: str | None = None) -> str:
    """`chart_dir`: a relative folder holding `<stem>.svg` per chart, or None for no images."""
    out = [f"## {md_text(page.heading or page.title)}", "", line(page.meta), ""]
    for section in page.sections:
        out += _block(section, chart_dir)
    return "\n".join(out).rstrip("\n") + "\n"


def inline(spans: Text) -> str:
    return "".join(_span(s) for s in spans)


def line(spans: Text) -> str:
    """Text that begins a line: a plain first span cannot start a block (`- `, `1. `, `> `)."""
    if spans and not (spans[0].style or spans[0].badge or spans[0].href):
        return md_line_start(spans[0].text) + inline(spans[1:])
    return inline(spans)


def _span(span: Span) -> str:
    if span.chart is not None:
        return f"_{md_text(span.chart.title)}_"
    raw = md_text(span.text)
    core = raw.strip()
    if not core:
        return raw
    lead, tail = raw[: len(raw) - len(raw.lstrip())], raw[len(raw.rstrip()):]  # emphasis needs no inner spaces
    return lead + _styled(span, core) + tail


def _styled(span: Span, body: str) -> str:
    if span.badge:
        body = f"**{_BADGE_MARK.get(span.badge, '')}{body}**"
    elif span.style == "strong":
        body = f"**{body}**"
    elif span.style == "code":
        body = f"`{span.text.strip()}`" if _plain_code(span.text.strip()) else body
    elif span.style == "muted":
        body = f"_{body}_"
    if span.href:
        body = f"[{body}]({span.href})"
    return body


def _plain_code(value: str) -> bool:
    """A code span shows its text raw: only for text that cannot end or break it (ours: ids, paths)."""
    return bool(value) and all(c.isalnum() or c in "-_.:/+#@ " for c in value) and not value.startswith(" ")


def _block(block: Block, chart_dir: str | None) -> list[str]:
    if isinstance(block, Section):
        return _section(block, chart_dir)
    if isinstance(block, Paragraph):
        return [line(block.body), ""]
    if isinstance(block, Bullets):
        return [*(f"- {inline(item)}" for item in block.items), ""]
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Figure):
        chart = block.chart
        return [f"![{md_text(chart.title)}]({chart_dir}/{chart.stem}.svg)", ""] if chart_dir else []
    if isinstance(block, Grid):
        return [line for b in block.blocks for line in _block(b, chart_dir)]
    if isinstance(block, Filters | ScriptChart):
        return []
    raise TypeError(f"not a page block: {block!r}")


def _section(section: Section, chart_dir: str | None) -> list[str]:
    body = [line for b in section.blocks for line in _block(b, chart_dir)]
    if section.collapsed:  # raw HTML in Markdown: its text is escaped as HTML
        summary = "".join(html_text(s.text) for s in section.title)
        return [f"<details><summary>{summary}</summary>", "", *body, "</details>", ""]
    if not section.title:
        return body
    return ["#" * (section.level + 1) + " " + inline(section.title), "", *body]


def _table(table: Table) -> list[str]:
    numeric = table.numeric
    marks = ["---:" if k < len(numeric) and numeric[k] else "---" for k in range(len(table.headers))]

    def row(cells: list[str]) -> str:
        return "| " + " | ".join(c or " " for c in cells) + " |"

    out = [line(table.caption), ""] if table.caption else []
    out += [row([md_text(h) for h in table.headers]), "|" + "|".join(marks) + "|"]
    out += [row(_cells(r, len(table.headers))) for r in table.rows]
    return [*out, ""]


def _cells(row: tuple[Text, ...] | Row, width: int) -> list[str]:
    if isinstance(row, Row) and row.group:  # a heading row: its name in bold in the first cell
        return [f"**{inline(row.cells[0])}**", *([""] * (width - 1))]
    return [inline(c) for c in (row.cells if isinstance(row, Row) else row)]
