"""The HTML renderer: one page, written out of a `page.blocks.Page`; the one HTML writer of every page (a run's
report, an A/B page, a night, a bisect, the dashboard's site).

Writes out the page and computes nothing: the page was built from the report data (page/sections.py,
page/comparison.py, report/dashboard/) and says what the Markdown summary says. Every piece of text goes through
`escape.html_text`, data for a script through `escape.script_json`; charts are our own SVG, inlined. A report's page
stands alone (inline CSS and SVG, no script, no network); a dashboard page links the site's style sheet (this `CSS`)
and scripts, all files of the site.
"""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.report.escape import html_text, script_json
from orchestrator.report.page.blocks import (
    Block,
    Bullets,
    Figure,
    Filters,
    Grid,
    Page,
    Paragraph,
    Row,
    Script,
    ScriptChart,
    ScriptData,
    Section,
    Span,
    Table,
    Text,
)

CSS = """
:root { --fg:#1d232a; --muted:#5f6b76; --line:#e3e7eb; --bg:#ffffff; --panel:#f6f8fa; --ok:#1f7a3d;
        --warn:#9a6100; --bad:#b42318; --accent:#2f5f98; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
       color:var(--fg); background:var(--bg); }
main { max-width:1360px; margin:0 auto; padding:24px 28px 48px; }
header { border-bottom:3px solid var(--accent); margin-bottom:18px; padding-bottom:10px; }
h1 { font-size:24px; margin:0 0 4px; } h2 { font-size:19px; margin:34px 0 10px; border-bottom:1px solid var(--line);
  padding-bottom:4px; } h3 { font-size:15px; margin:22px 0 8px; color:var(--accent); }
.meta { color:var(--muted); font-size:13px; } .meta b { color:var(--fg); font-weight:600; }
table { border-collapse:collapse; margin:6px 0 14px; font-size:13px; display:block; max-width:100%; overflow-x:auto; }
th, td { padding:4px 8px; border-bottom:1px solid var(--line); text-align:left; vertical-align:top; }
th { background:var(--panel); font-weight:600; }  /* headers wrap: a table fits a 1400 px window */
td.n { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
tbody tr:nth-child(even) td { background:#fbfcfd; }
.answer { background:var(--panel); border-left:4px solid var(--accent); padding:10px 16px; margin:10px 0 16px; }
.answer p { margin:4px 0; }
.badge { display:inline-block; padding:1px 7px; border-radius:10px; font-size:12px; font-weight:600; white-space:nowrap; }
.fast { background:#dcf2e3; color:var(--ok); } .base { background:#e4ecf7; color:var(--accent); }
.warn { background:#fff1d6; color:var(--warn); } .bad { background:#fde2df; color:var(--bad); }
.pass { color:var(--ok); font-weight:600; } .fail { color:var(--bad); font-weight:600; } .skip { color:var(--muted); }
ul.flags { color:var(--warn); font-size:12px; margin:0 0 12px; padding-left:18px; }
.grid { display:grid; grid-template-columns:repeat(auto-fit, minmax(520px, 1fr)); gap:4px 24px; }
figure { margin:10px 0 18px; } figure svg { max-width:100%; height:auto; }
figcaption { color:var(--muted); font-size:12px; }
.mono { font-family:ui-monospace,"DejaVu Sans Mono",monospace; font-size:12px; }
.muted { color:var(--muted); } .none { color:var(--muted); font-style:italic; }
nav { font-size:13px; margin:8px 0 0; } nav a { margin-right:14px; color:var(--accent); text-decoration:none; }
footer { margin-top:36px; color:var(--muted); font-size:12px; } footer li { margin:3px 0; }
.good { background:#dcf2e3; color:var(--ok); } .info { background:#e4ecf7; color:var(--accent); }
details > summary { cursor:pointer; font-weight:600; margin:18px 0 6px; }
a { color:var(--accent); }
nav.site { margin:0 0 10px; font-size:14px; }
tr.group th { background:#e8eef6; }
.filters label { margin-right:1em; }
div.chart { width:100%; max-width:1100px; }
"""
_STYLE = {"strong": "b", "code": "code", "muted": "span"}


def render_html(page: Page) -> str:
    nav = "".join(f'<a href="{html_text(href)}">{html_text(label)}</a>' for label, href in page.nav)
    site = "".join(f'<a href="{html_text(href)}">{html_text(label)}</a>' for label, href in page.site)
    style = (f'<link rel="stylesheet" href="{html_text(page.stylesheet)}">' if page.stylesheet
             else f"<style>{CSS}</style>")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',  # no favicon request: the page needs nothing from anywhere
        f"<title>{html_text(page.title)}</title>{style}</head><body><main>",
        "<header>" + (f'<nav class="site">{site}</nav>' if site else "")
        + f"<h1>{html_text(page.heading or page.title)}</h1>"
        + (f'<div class="meta">{inline(page.meta)}</div>' if page.meta else "")
        + (f"<nav>{nav}</nav>" if nav else "") + "</header>",
        *(_block(s) for s in page.sections),
        "</main>",
        *(_script(s) for s in page.scripts),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _script(script: Script | ScriptData) -> str:
    if isinstance(script, ScriptData):
        return f'<script type="application/json" id="{html_text(script.anchor)}">{script_json(script.value)}</script>'
    if script.src:
        return f'<script src="{html_text(script.src)}"></script>'
    return f"<script>{script.code}</script>"  # our own code, never a name


def inline(spans: Text) -> str:
    return "".join(_span(s) for s in spans)


def _span(span: Span) -> str:
    body = html_text(span.text)
    title = f' title="{html_text(span.title)}"' if span.title else ""
    if span.chart is not None:
        body = span.chart.svg
    elif span.anchor:
        body = f'<span id="{html_text(span.anchor)}"{title}>{body}</span>'
    elif span.badge:
        body = f'<span class="badge {span.badge}"{title}>{body}</span>'
    elif span.style == "muted":
        body = f'<span class="muted"{title}>{body}</span>'
    elif span.style == "code":
        body = f'<span class="mono"{title}>{body}</span>'
    elif span.style == "strong":
        body = f"<b{title}>{body}</b>"
    elif title:
        body = f"<span{title}>{body}</span>"
    if span.href:
        body = f'<a href="{html_text(span.href)}">{body}</a>'
    return body


def _block(block: Block) -> str:
    if isinstance(block, Section):
        return _section(block)
    if isinstance(block, Paragraph):
        return f'<div class="answer">{_p(block.body)}</div>' if block.tone == "answer" else _p(block.body)
    if isinstance(block, Bullets):
        tone = ' class="flags"' if block.tone == "flags" else ""
        return f"<ul{tone}>" + "".join(f"<li>{inline(item)}</li>" for item in block.items) + "</ul>"
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Figure):
        chart = block.chart
        return (f'<figure class="chart" data-chart="{html_text(chart.stem)}">{chart.svg}<figcaption>'
                f"{html_text(chart.title)}</figcaption></figure>")
    if isinstance(block, Grid):
        return '<div class="grid">' + "".join(f"<div>{_block(b)}</div>" for b in block.blocks) + "</div>"
    if isinstance(block, Filters):
        return '<p class="filters">' + "".join(
            f'<label>{html_text(k)} <select data-filter="{html_text(k)}"><option value="">all</option></select></label>'
            for k in block.keys) + "</p>"
    if isinstance(block, ScriptChart):
        return f'<div class="chart" id="{html_text(block.anchor)}"></div>'
    raise TypeError(f"not a page block: {block!r}")


def _p(body: Text) -> str:
    return f"<p>{inline(body)}</p>"


def _section(section: Section) -> str:
    tag = f"h{section.level}"
    anchor = f' id="{html_text(section.anchor)}"' if section.anchor else ""
    body = "\n".join(_block(b) for b in section.blocks)
    if section.collapsed:
        return f"<details{anchor}><summary>{inline(section.title)}</summary>{body}</details>"
    heading = f"<{tag}>{inline(section.title)}</{tag}>" if section.title else ""  # untitled: blocks under the header
    return f"<section{anchor}>{heading}{body}</section>"


def _table(table: Table) -> str:
    head = "".join(f"<th>{html_text(h)}</th>" for h in table.headers)
    numeric = table.numeric

    def cell(k: int, value: Text) -> str:
        return f'<td class="n">{inline(value)}</td>' if k < len(numeric) and numeric[k] else f"<td>{inline(value)}</td>"

    body = "".join(_row(row, cell, len(table.headers)) for row in table.rows)
    caption = f"<p>{inline(table.caption)}</p>" if table.caption else ""
    anchor = f' id="{html_text(table.anchor)}"' if table.anchor else ""
    return f"{caption}<table{anchor}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _row(row: tuple[Text, ...] | Row, cell: Callable[[int, Text], str], width: int) -> str:
    if not isinstance(row, Row):
        return "<tr>" + "".join(cell(k, c) for k, c in enumerate(row)) + "</tr>"
    data = "".join(f' data-{html_text(k)}="{html_text(v)}"' for k, v in row.data)
    if row.group:
        return f'<tr class="group"{data}><th colspan="{width}">{inline(row.cells[0])}</th></tr>'
    return f"<tr{data}>" + "".join(cell(k, c) for k, c in enumerate(row.cells)) + "</tr>"
