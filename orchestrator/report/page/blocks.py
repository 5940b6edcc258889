"""The one view model every page is made of: sections of paragraphs, lists, tables and charts.

A page (a run's report, an A/B comparison, a night) is built once as a `Page` from the report
data (report/model/); `render/html.py` and `render/markdown.py` only write it out, each with its
own escaping rule (escape.py). So the HTML page and the Markdown summary say the same thing,
sentence for sentence, and neither computes anything.

Text is a tuple of `Span`s: plain, or `strong` / `code` / `muted`, a `badge` (a short verdict
or flag with a tone, its `title` the reason, shown on hover in HTML and in words in Markdown),
or a link (`href`: "#anchor" or a relative file), or a small chart in the line (a trend in a table
cell). A run's sections (page/sections.py) include an LLM's generation figures (page/llm.py) and
memory (page/memory.py) as page blocks like any other.
A `Figure` shows a `Chart` that render/charts.py drew for the page (`Charts`: none for formats without).

The dashboard's pages (report/dashboard/) are pages too: a site's links above the title, a shared style sheet, a
table whose rows carry the keys its filters choose by (`Row`, `Filters`), boxes its plotly charts are drawn into
(`ScriptChart`) and the scripts that draw them (`Script`, `ScriptData`): HTML only, a Markdown page leaves them out.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.report.model import Report


@dataclass(frozen=True)
class Span:
    text: str
    style: str = ""  # "", "strong", "code", "muted"
    badge: str = ""  # a badge's tone: "good", "info", "warn", "bad"
    title: str = ""  # why (a badge's reason); HTML shows it on hover, Markdown does not repeat it
    href: str = ""  # "#anchor" or a relative file
    chart: Chart | None = None  # a small chart in the line (a trend in a table cell): its SVG in HTML, title otherwise
    anchor: str = ""  # plain text under an id a page's script writes into (the dashboard index's count of rows shown)

    def __post_init__(self) -> None:
        if self.href and not linkable(self.href):
            raise ValueError(f"a page links only within itself or to a relative file, not {self.href!r}")


def linkable(href: str) -> bool:
    """A link a page may hold: no scheme (nothing to fetch, no javascript:), only within itself or a relative file."""
    return ":" not in href


Text = tuple[Span, ...]


def text(*parts: str | Span | Text) -> Text:
    """Spans from plain strings, spans and other texts, in order."""
    out: list[Span] = []
    for part in parts:
        if isinstance(part, str):
            if part:
                out.append(Span(part))
        elif isinstance(part, Span):
            out.append(part)
        else:
            out.extend(part)
    return tuple(out)


def strong(value: str) -> Span:
    return Span(value, style="strong")


def code(value: str) -> Span:
    return Span(value, style="code")


def muted(value: str) -> Span:
    return Span(value, style="muted")


def badge(label: str, tone: str, reason: str = "") -> Span:
    return Span(label, badge=tone, title=reason)


def link(label: str, href: str) -> Span:
    return Span(label, href=href)


def link_or_label(label: str, href: str | None) -> Span:
    """A link where there is one a page may hold (files named in a site's own data), else the label alone."""
    return Span(label, href=href) if href and linkable(href) else Span(label)


def inline_chart(chart: Chart) -> Span:
    return Span(chart.title, chart=chart)


# A verdict's badge tone, on every page that shows one (an A/B page, a night, the dashboard).
VERDICT_TONE = {"regressed": "bad", "improved": "good", "unchanged": "good", "inconclusive": "warn", "no-data": "bad",
                "new": "info", "settings-differ": "warn"}


def verdict_badge(verdict: str, reason: str = "") -> Span:
    return badge(verdict, VERDICT_TONE.get(verdict, "info"), reason)


def anchor(*parts: str) -> str:
    """An id for `#` links from names the user chose: letters, digits and `_.-` kept, anything else `-`, and a short
    digest of the name when something was replaced (so two names never share an anchor)."""
    raw = "-".join(parts)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "-", raw)
    if safe == raw:
        return safe
    return f"{safe}-{hashlib.sha256(raw.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def joined(items: Sequence[Text], separator: str = ", ") -> Text:
    out: list[Span] = []
    for k, item in enumerate(items):
        if k:
            out.append(Span(separator))
        out.extend(item)
    return tuple(out)


def plain(value: Text) -> str:
    """The text without styling (for tests, titles and terminal output)."""
    return "".join(s.text for s in value)


@dataclass(frozen=True)
class Paragraph:
    body: Text
    tone: str = ""  # "answer": the box that answers the page's question


@dataclass(frozen=True)
class Bullets:
    items: tuple[Text, ...]
    tone: str = ""  # "flags": reasons not to take a number at face value


@dataclass(frozen=True)
class Row:
    """A row that says more than its cells: the keys a page's `Filters` choose rows by (`data`, in HTML `data-*`
    attributes), or a heading over the rows after it (`group`: one cell across the table, `data` naming the group)."""

    cells: tuple[Text, ...]
    data: tuple[tuple[str, str], ...] = ()
    group: bool = False


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[Text, ...] | Row, ...]
    numeric: tuple[bool, ...] = ()  # right-aligned columns
    caption: Text = ()  # a line above the table (a device's name, ...)
    anchor: str = ""  # an id (a page's script finds the table by it)


@dataclass(frozen=True)
class Filters:
    """One chooser per key over the rows of the table after it (`Row.data`), "all" first: the page's script fills
    and applies them (the dashboard's index); HTML only."""

    keys: tuple[str, ...]


@dataclass(frozen=True)
class ScriptChart:
    """An empty box a page's script draws a chart into (the dashboard's plotly charts); HTML only."""

    anchor: str


@dataclass(frozen=True)
class Chart:
    """A rendered chart: inline SVG text plus a file stem for formats that write it beside."""

    stem: str  # "tiny_cnn-latency": file name without extension
    title: str
    svg: str


@dataclass(frozen=True)
class Charts:
    """A report's charts, drawn by render/charts.py for the page formats that show them (empty otherwise):
    (model, kind, chart) in drawing order, kinds "latency", "op-groups", "op-heatmap", "history", "decode-steps",
    "latency-accuracy" (a model under export recipes)."""

    drawn: tuple[tuple[str, str, Chart], ...] = ()

    def of(self, model: str, kind: str) -> Chart | None:
        return next((chart for m, k, chart in self.drawn if (m, k) == (model, kind)), None)

    @property
    def all(self) -> tuple[Chart, ...]:
        return tuple(chart for _, _, chart in self.drawn)


NO_CHARTS = Charts()  # a page without figures (and the formats that draw none)


@dataclass(frozen=True)
class Figure:
    chart: Chart


@dataclass(frozen=True)
class Grid:
    """Blocks side by side where there is room (HTML); one after the other in Markdown."""

    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Section:
    title: Text
    anchor: str = ""
    blocks: tuple[Block, ...] = ()
    level: int = 2  # 2: a page section, 3: within one
    collapsed: bool = False  # Markdown <details>, HTML <details>: the methods, versions
    nav: str = ""  # the label the page's navigation lists it under ("": not listed)


Block = Paragraph | Bullets | Table | Figure | Grid | Section | Filters | ScriptChart


@dataclass(frozen=True)
class Script:
    """A script a page runs (a report's page has none): a relative file (`src`), or our own code inline (`code`)."""

    src: str = ""
    code: str = ""


@dataclass(frozen=True)
class ScriptData:
    """Data for a page's script, JSON under an id (`value`: lists, dicts, strings, numbers); the renderer escapes it
    (escape.script_json)."""

    anchor: str
    value: object


@dataclass(frozen=True)
class Page:
    title: str
    meta: Text  # run ids, status, settings: the line under the title
    sections: tuple[Section, ...] = ()
    heading: str = ""  # the title shown on the page, when it differs from the window's (`title`)
    site: tuple[tuple[str, str], ...] = ()  # (label, relative file) of a site's pages, above the heading
    stylesheet: str = ""  # a shared style sheet (a relative file); "": the style inline, the page stands alone
    scripts: tuple[Script | ScriptData, ...] = ()  # after the page's blocks, in order

    @property
    def nav(self) -> tuple[tuple[str, str], ...]:
        """(label, "#anchor") of every section that names a `nav` label, in page order: read from the sections
        themselves, so the navigation lists exactly what the page shows."""
        return tuple((s.nav, "#" + s.anchor) for s in self.sections if s.nav)


@dataclass(frozen=True)
class RunView:
    """One run as a page shows it: its report and the charts drawn for it; on a page of several runs (an A/B
    page, a night), the anchor prefix and title label that keep its sections apart (page/sections.py)."""

    report: Report
    charts: Charts = NO_CHARTS
    prefix: str = ""  # "run-<id>-": every anchor of the run's sections starts with it
    label: str = ""  # " · run <id>": added to its sections' titles
