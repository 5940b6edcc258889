"""The HTML report: one self-contained page (inline CSS and SVG, no script, no network).

Formats a `model.Report`; computes nothing. Order answers the questions in the order people
ask them: which device is fast enough (summary on top), per model the latency side by side,
where each device spends its time, how ops compare across devices, how that changed over
time; then what the devices were and how the numbers were computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from orchestrator.report.cells import LATENCY_HEADERS, clip, interval, ms, pct, ratio
from orchestrator.report.llm_render import llm_html
from orchestrator.report.memory import memory_html
from orchestrator.report.model import (
    Chart,
    DeviceLatency,
    DeviceOps,
    ModelSection,
    Report,
)

CSS = """
:root { --fg:#1d232a; --muted:#5f6b76; --line:#e3e7eb; --bg:#ffffff; --panel:#f6f8fa; --ok:#1f7a3d;
        --warn:#9a6100; --bad:#b42318; --accent:#2f5f98; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
       color:var(--fg); background:var(--bg); }
main { max-width:1240px; margin:0 auto; padding:24px 28px 48px; }
header { border-bottom:3px solid var(--accent); margin-bottom:18px; padding-bottom:10px; }
h1 { font-size:24px; margin:0 0 4px; } h2 { font-size:19px; margin:34px 0 10px; border-bottom:1px solid var(--line);
  padding-bottom:4px; } h3 { font-size:15px; margin:22px 0 8px; color:var(--accent); }
.meta { color:var(--muted); font-size:13px; } .meta b { color:var(--fg); font-weight:600; }
table { border-collapse:collapse; margin:6px 0 14px; font-size:13px; }
th, td { padding:4px 8px; border-bottom:1px solid var(--line); text-align:left; vertical-align:top; }
th { background:var(--panel); font-weight:600; white-space:nowrap; }
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
"""


def render_html(report: Report) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',  # no favicon request: the page needs nothing from anywhere
        f"<title>etfarm report {escape(report.run_id)}</title><style>{CSS}</style></head><body><main>",
        _header(report),
        _summary(report),
        *(_model(report, m) for m in report.models),
        llm_html(report.llm),
        memory_html(report.memory),
        _numerics(report),
        _facts(report),
        _footer(report),
        "</main></body></html>",
    ]
    return "\n".join(parts) + "\n"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool] = ()) -> str:
    """Cells are already-escaped HTML; `numeric[i]` right-aligns column i."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="n">{c}</td>' if i < len(numeric) and numeric[i] else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _header(report: Report) -> str:
    nav = "".join(f'<a href="#model-{escape(m.name)}">{escape(m.name)}</a>' for m in report.models)
    return (
        f"<header><h1>etfarm report: {len(report.models)} model{'s' if len(report.models) != 1 else ''} "
        f"on {len(report.devices)} device{'s' if len(report.devices) != 1 else ''}</h1>"
        f'<div class="meta">run <b class="mono">{escape(report.run_id)}</b> · status <b>{escape(report.status)}</b>'
        f" · started {escape(report.started)} · {escape(report.settings)} · baseline <b>"
        f"{escape(report.baseline or '-')}</b></div>"
        f'<nav><a href="#summary">summary</a>{nav}<a href="#devices">devices</a><a href="#methods">method</a></nav>'
        "</header>"
    )


def _summary(report: Report) -> str:
    lines = []
    for m in report.models:
        fastest = m.fastest
        if fastest is None:
            lines.append(f'<p><b>{escape(m.name)}</b>: <span class="fail">no device produced a result</span></p>')
            continue
        others = [d for d in m.latency if d.device != fastest.device and d.p50_ms is not None]
        vs = "; ".join(f"{escape(d.device)} {ms(d.p50_ms)} ms" for d in others)
        lines.append(
            f"<p><b>{escape(m.name)}</b>: fastest on <b>{escape(fastest.device)}</b> at "
            f"{ms(fastest.p50_ms)} ms p50{' (' + vs + ')' if vs else ''}.</p>"
        )
    headers = ["model", *report.devices]
    rows = []
    for m in report.models:
        by_device = {d.device: d for d in m.latency}
        rows.append(
            [
                f'<a href="#model-{escape(m.name)}">{escape(m.name)}</a>',
                *(_summary_cell(by_device.get(dev), report.baseline) for dev in report.devices),
            ]
        )
    return (
        f'<section id="summary"><h2>Which device is fast enough?</h2><div class="answer">{"".join(lines)}</div>'
        + _table(headers, rows, [False, *([True] * len(report.devices))])
        + f'<p class="muted">End-to-end p50 per execution, ratio to {escape(report.baseline or "-")} with its '
        "95 % confidence interval; flags say why a number should not be taken at face value.</p></section>"
    )


def _summary_cell(d: DeviceLatency | None, baseline: str | None) -> str:
    if d is None:
        return '<span class="none">not run</span>'
    if d.p50_ms is None:
        return '<span class="badge bad">failed</span>'
    cell = f"<b>{ms(d.p50_ms)} ms</b>"
    if d.device == baseline:
        cell += ' <span class="badge base">baseline</span>'
    elif d.ratio is not None:
        cell += f' · {ratio(d.ratio)} <span class="muted">{interval(d.ratio_ci)}</span>'
    if d.fastest:
        cell += ' <span class="badge fast">fastest</span>'
    cell += "".join(" " + _badge(f.kind, f.reason) for f in d.flags)
    return cell


def _model(report: Report, m: ModelSection) -> str:
    charts = {c.stem[len(m.name) + 1 :]: c for c in m.charts}  # "latency", "op-groups", ...
    heading = (
        f'<section id="model-{escape(m.name)}"><h2>Model {escape(m.name)} <span class="muted">({escape(m.backend)})</span></h2>'
    )
    out = [
        heading,
        "<h3>End-to-end latency, devices side by side</h3>",
        _latency_table(report, m),
        _figure(charts.get("latency")),
    ]
    out.append("<h3>Where each device spends its time</h3>")
    if m.ops:
        out.append(_figure(charts.get("op-groups")))
        out.append('<div class="grid">' + "".join(_top_ops(o) for o in m.ops) + "</div>")
    else:
        out.append('<p class="none">no per-op statistics (no device produced an ETDump)</p>')
    if len(m.latency) > 1 and m.op_ratios:
        out.append(f"<h3>Ops across devices: p50 relative to {escape(report.baseline or '-')}</h3>")
        out.append(_figure(charts.get("op-heatmap")))
        out.append(_op_ratio_table(report, m))
    out.append("<h3>Over time</h3>")
    if m.history:
        out.append(_figure(charts.get("history")))
        devices = [d.device for d in m.latency]
        rows = [
            [
                f'<span class="mono">{escape(r.run_id)}</span>',
                escape(r.started),
                f'<span class="mono">{escape((r.git_commit or "-")[:10])}</span>',
                *(
                    ms(p) if p is not None else f'<span class="muted">{escape(st or "not run")}</span>'
                    for p, st in zip(r.p50_ms, r.status, strict=False)
                ),
            ]
            for r in m.history_rows
        ]
        out.append(
            _table(
                ["run", "started", "model commit", *(f"{d} p50 ms" for d in devices)],
                rows,
                [False, False, False, *([True] * len(devices))],
            )
        )
    else:
        out.append('<p class="none">no history: this model has no earlier runs in the results store</p>')
    out.append("</section>")
    return "\n".join(x for x in out if x)


def _latency_table(report: Report, m: ModelSection) -> str:
    headers = [*LATENCY_HEADERS, f"vs {report.baseline or '-'}", "95% CI", ""]
    rows = []
    for d in m.latency:
        name = f"<b>{escape(d.device)}</b>" if d.fastest else escape(d.device)
        verdict = {"pass": "pass", "fail": "fail"}.get(d.verification, "skip")
        flags = " ".join(
            [*(['<span class="badge fast">fastest</span>'] if d.fastest else []), *(_badge(f.kind, f.reason) for f in d.flags)]
        )
        rows.append(
            [
                name,
                str(d.runs),
                ms(d.p50_ms),
                ms(d.p90_ms),
                pct(d.cv),
                f"{d.p90_over_p50:.2f}" if d.p90_over_p50 is not None else "-",
                ms(d.untraced_p50_ms),
                pct(d.tracer_overhead, signed=True),
                ms(d.load_p50_ms),
                f'<span class="{verdict}" title="{escape(d.verification_detail)}">{escape(d.verification)}</span>',
                "baseline" if d.device == report.baseline else ratio(d.ratio),
                interval(d.ratio_ci),
                flags or "-",
            ]
        )
    reasons = "".join(
        f"<li><b>{escape(d.device)}</b> {escape(f.kind)}: {escape(f.reason)}</li>" for d in m.latency for f in d.flags
    )
    return _table(headers, rows, [False, True, True, True, True, True, True, True, True, False, True, True, False]) + (
        f'<ul class="flags">{reasons}</ul>' if reasons else ""
    )


def _badge(kind: str, reason: str) -> str:
    tone = "bad" if kind in ("failed", "verification") else "warn"
    return f'<span class="badge {tone}" title="{escape(reason)}">{escape(kind)}</span>'


def _top_ops(ops: DeviceOps) -> str:
    rows = [
        [
            escape(op.name),
            ms(op.p50_ms),
            pct(op.share),
            _what(op.module_path, op.op_types, op.source_line, op.covers),
            escape(op.backend) if op.delegated else "no",
        ]
        for op in ops.top
    ]
    return (
        f"<div><b>{escape(ops.device)}</b>: top {len(ops.top)} events by mean time"
        + _table(["event", "p50 ms", "share", "in your model", "delegated"], rows, [False, True, True, False, False])
        + "</div>"
    )


def _what(module_path: str, op_types: str, source_line: str = "", covers: str = "") -> str:
    """Module path (monospace), op types and source line; for a delegate's event, the modules the
    delegate covers; "-" when the ETRecord does not say."""
    parts = []
    if module_path:
        parts.append(f'<span class="mono">{escape(clip(module_path, 60))}</span>')
    elif covers:
        modules = [m for m in covers.split(";") if m]
        shown = ", ".join(modules) if len(modules) <= 2 else f"{modules[0]} … {modules[-1]} ({len(modules)})"
        parts.append(
            f'<span class="muted">delegate over</span> <span class="mono" title="{escape(covers)}">{escape(shown)}</span>'
        )
    if op_types:
        parts.append(escape(_op_types(op_types)))
    if source_line:
        parts.append(f'<span class="muted mono">{escape(source_line)}</span>')
    return "<br>".join(parts) or '<span class="muted">-</span>'


def _op_types(text: str) -> str:
    names = [t.split(".")[1] if t.startswith("aten.") and t.count(".") >= 2 else t for t in text.split(";") if t]
    short = list(dict.fromkeys(names))
    return ", ".join(short[:4]) + (f" +{len(short) - 4}" if len(short) > 4 else "")


def _op_ratio_table(report: Report, m: ModelSection) -> str:
    devices = [d.device for d in m.latency]
    rows = [
        [
            escape(clip(r.name, 40)),
            _what(r.module_path, ""),
            *(
                f'{ms(p)} <span class="muted">{ratio(x)}</span>' if p is not None else "-"
                for p, x in zip(r.p50_ms, r.ratio, strict=False)
            ),
        ]
        for r in m.op_ratios
    ]
    return _table(["event", "module", *(f"{d} p50 ms" for d in devices)], rows, [False, False, *([True] * len(devices))])


def _figure(chart: Chart | None) -> str:
    if chart is None:
        return ""
    return (
        f'<figure class="chart" data-chart="{escape(chart.stem)}">{chart.svg}<figcaption>{escape(chart.title)}'
        "</figcaption></figure>"
    )


def _facts(report: Report) -> str:
    rows = [
        [
            escape(f.device) + (f'<br><span class="flags bad">{escape(f.error)}</span>' if f.error else ""),
            escape(f.transport),
            escape(f.target),
            escape(f.status),
            escape(f.abi),
            escape(f.cores),
            escape(f.frequencies),
            escape(f.governor),
            escape(f.temperatures),
            escape(f.load),
            escape(f.product),
        ]
        for f in report.facts
    ]
    return (
        '<section id="devices"><h2>What the devices were</h2>'
        + _table(
            [
                "device",
                "transport",
                "target",
                "status",
                "abi",
                "cores",
                "frequencies",
                "governor",
                "temperatures",
                "load (1/5/15 min)",
                "product",
            ],
            rows,
        )
        + '<p class="muted">Facts at the start of the job; temperatures over the readings taken before every '
        'process run. "-": the device does not expose it.</p></section>'
    )


def _footer(report: Report) -> str:
    methods = "".join(f"<li>{escape(m)}</li>" for m in report.methods)
    versions = " · ".join(f"{escape(k)} {escape(v)}" for k, v in report.versions)
    return f'<footer id="methods"><h2>How these numbers were computed</h2><ul>{methods}</ul><p>{versions}</p></footer>'


def _numerics(report: Report) -> str:
    """Which devices diverge, on which ops (module path, source line), where divergence starts, and
    each device's final-output verdict; empty for runs made without --numerics."""
    if report.numerics is None:
        if report.numerics_error is None:
            return ""
        return (f'<section id="numerics"><h2>Numerics</h2><p class="muted">not available: '
                f"{escape(report.numerics_error)}</p></section>")
    n = report.numerics
    verdict = (f"<b>{escape(', '.join(n.diverging_devices))}</b> diverge" if n.diverges else "no op crosses the threshold")
    out = [f'<section id="numerics"><h2>Numerics: which op diverges, on which device</h2>'
           f"<p>{n.metric.value.upper()} of each op's intermediate outputs, threshold {n.threshold:g}: {verdict}.</p>"]
    rows = []
    for m in n.models:
        for c in m.comparisons:
            first = c.first_divergence
            against = "AOT reference" if c.against == "aot" else c.against.replace("device:", "device ")
            where = (f"op {first.index} {escape(' '.join(first.runtime_ops) or ' '.join(first.aot_ops))}"
                     f' <span class="muted">{escape(first.module_path or "")} {escape(first.source or "")}</span>'
                     if first else "-")
            status = (f'<span class="badge bad">{len(c.diverging)} diverging</span>' if c.diverging
                      else escape(c.error) if c.error else '<span class="badge fast">within threshold</span>')
            rows.append([escape(m.device), escape(m.model), escape(against), status, where,
                         escape(m.verification or "-")])
        if m.error:
            rows.append([escape(m.device), escape(m.model), "-", escape(m.error), "-", escape(m.verification or "-")])
    out.append(_table(["device", "model", "against", "ops", "divergence starts at", "outputs verified"], rows))
    out.append("</section>")
    return "".join(out)

