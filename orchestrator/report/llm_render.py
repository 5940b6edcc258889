"""The LLM section of the HTML and Markdown reports, and its per-step decode latency chart. Formats only.

Per model that generated (report/llm_section.py): one table with the devices side by side (prompt
and generated tokens, time to first token, prefill and decode tokens/s, decode tokens/s without
the event tracer, memory after prefill and after decode, the tokens' verification), the per-step
decode latency chart, and per device the ops that take the most time per forward call in each
phase. Every name is escaped (HTML) or its Markdown markup characters escaped; the chart follows
charts.py (deterministic SVG, text as text).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

from orchestrator.report.cells import clip, ms, pct
from orchestrator.report.llm_section import LlmDevice, LlmSection
from orchestrator.report.model import Chart
from orchestrator.report.text import format_bytes

HEADERS = ("device", "prompt", "generated", "gens", "TTFT p50 ms", "prefill tok/s", "decode tok/s",
           "decode tok/s no ETDump", "after prefill RSS / PSS", "after decode RSS / PSS", "tokens")
OP_HEADERS = ("device", "phase", "event", "#", "avg ms per call", "p50 ms", "share of phase", "module")


def device_cells(d: LlmDevice) -> list[str]:
    calls = f"{d.prefill_calls} call{'s' if d.prefill_calls != 1 else ''}"
    return [d.device, f"{d.prompt_len} ({calls})", str(d.gen_len), str(d.generations), ms(d.ttft_ms),
            _rate(d.prefill_tokens_per_s), _rate(d.decode_tokens_per_s), _rate(d.untraced_decode_tokens_per_s),
            f"{_kb(d.rss_prefill_kb)} / {_kb(d.pss_prefill_kb)}", f"{_kb(d.rss_decode_kb)} / {_kb(d.pss_decode_kb)}",
            d.verification]


def llm_html(sections: Sequence[LlmSection]) -> str:
    """`<section id="llm">`, or "" when no model generated."""
    if not sections:
        return ""
    out = ['<section id="llm"><h2>LLMs: time to first token, tokens per second, memory</h2>']
    for s in sections:
        out.append(f"<h3>{escape(s.model)}</h3>")
        out.append(_html_table(HEADERS, [device_cells(d) for d in s.devices], numeric_from=3))
        if s.chart is not None:
            out.append(f'<figure>{s.chart.svg}<figcaption>{escape(s.chart.title)}</figcaption></figure>')
        if s.phase_ops:
            rows = [[o.device, o.phase, clip(o.name, 48), str(o.index), ms(o.avg_ms), ms(o.p50_ms), pct(o.share),
                     clip(o.where, 60)] for o in s.phase_ops]
            out.append("<p>Where each phase spends its time: per device, the ops with the most time per forward call "
                       "in prefill and in decode.</p>")
            out.append(_html_table(OP_HEADERS, rows, numeric_from=3, numeric_to=7))
    out.append("</section>")
    return "\n".join(out)


def llm_markdown(sections: Sequence[LlmSection], chart_dir: str | None = None) -> list[str]:
    """Markdown lines of the section ([] when no model generated)."""
    if not sections:
        return []
    out = ["### LLMs: time to first token, tokens per second, memory", ""]
    for s in sections:
        out += [f"#### {_md(s.model)}", "", md_table(HEADERS, [device_cells(d) for d in s.devices]), ""]
        if s.chart is not None and chart_dir is not None:
            out += [f"![{_md(s.chart.title)}]({chart_dir}/{s.chart.stem}.svg)", ""]
        if s.phase_ops:
            rows = [[o.device, o.phase, clip(o.name, 48), str(o.index), ms(o.avg_ms), ms(o.p50_ms), pct(o.share),
                     clip(o.where, 60)] for o in s.phase_ops]
            out += [md_table(OP_HEADERS, rows), ""]
    return out


def step_chart(section: LlmSection) -> Chart | None:
    """Decode step latency by step, one line per device (median over the generations)."""
    lines = [d for d in section.devices if d.step_ms]
    if not lines:
        return None
    from orchestrator.report.charts import PALETTE, WIDTH_IN, _figure, _setup, _svg

    _setup()
    stem = f"{section.model}-decode-steps"
    fig, ax = _figure(WIDTH_IN, 2.2, ["00.0000 + ylabel"], bottom_in=0.6)
    titles = {}
    for i, d in enumerate(lines):
        line = ax.plot(range(2, len(d.step_ms) + 2), d.step_ms, marker=".", color=PALETTE[i % len(PALETTE)],
                       label=d.device)[0]
        line.set_gid(f"steps-{i}")
        titles[f"steps-{i}"] = (f"{d.device}: decode {_rate(d.decode_tokens_per_s)} tokens/s; step p50 from "
                                f"{ms(d.step_ms[0])} to {ms(d.step_ms[-1])} ms")
    ax.set_xlabel("generated token (token 1 comes from the prefill)")
    ax.set_ylabel("decode step p50 ms")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    ax.set_title(f"{section.model}: latency of each decode step")
    return Chart(stem, f"{section.model}: per-step decode latency", _svg(fig, stem, titles))


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric_from: int, numeric_to: int = 99) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f'<td class="n">{escape(c)}</td>' if numeric_from <= i < numeric_to
                                    else f"<td>{escape(c)}</td>" for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


def _md(text: str) -> str:
    """Text safe in a Markdown table cell: markup characters escaped, no raw HTML."""
    return _MD_SPECIAL.sub(r"\\\1", text.replace("\n", " "))


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value >= 100 else f"{value:.2f}"


def _kb(value: int | None) -> str:
    return "-" if value is None else format_bytes(value * 1024)
