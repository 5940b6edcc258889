"""The Markdown report: fits a CI job summary ($GITHUB_STEP_SUMMARY). Formats; computes nothing.

Tables and verdicts always; charts only as image links (`charts/<stem>.svg`), written beside
the Markdown file by `write_report` when `--output` names a directory. GitHub renders SVG
files referenced by relative path in a repository or an uploaded artifact, but not data: URIs,
so nothing is inlined.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.report.cells import LATENCY_HEADERS, clip, interval, ms, pct, ratio
from orchestrator.report.llm_render import llm_markdown
from orchestrator.report.memory import memory_markdown
from orchestrator.report.model import ModelSection, Report

CHART_DIR = "charts"


def render_markdown(report: Report, chart_dir: str | None = None) -> str:
    """`chart_dir`: a relative folder holding `<stem>.svg` per chart, or None for no images."""
    intro = (
        f"Run `{report.run_id}`, status **{report.status}**, started {report.started}; {report.settings}; "
        f"baseline **{report.baseline or '-'}**."
    )
    out = [
        f"## etfarm report: {len(report.models)} model(s) on {', '.join(report.devices) or 'no devices'}",
        "",
        intro,
        "",
        "### Which device is fast enough?",
        "",
    ]
    for m in report.models:
        fastest = m.fastest
        if fastest is None:
            out.append(f"- **{m.name}**: no device produced a result")
        else:
            others = "; ".join(
                f"{d.device} {ms(d.p50_ms)} ms ({ratio(d.ratio)})"
                for d in m.latency
                if d.device != fastest.device and d.p50_ms is not None
            )
            out.append(
                f"- **{m.name}**: fastest on **{fastest.device}**, {ms(fastest.p50_ms)} ms p50"
                + (f" ({others})" if others else "")
            )
    out.append("")
    rows = []
    for m in report.models:
        by_device = {d.device: d for d in m.latency}
        cells = []
        for device in report.devices:
            d = by_device.get(device)
            if d is None:
                cells.append("not run")
            elif d.p50_ms is None:
                cells.append("**failed**")
            else:
                cell = f"{ms(d.p50_ms)} ms"
                cell += " (baseline)" if device == report.baseline else f" · {ratio(d.ratio)} {interval(d.ratio_ci)}"
                cell += "".join(f" ⚠ {f.kind}" for f in d.flags)
                cells.append(cell)
        rows.append([m.name, *cells])
    out += [_table(["model", *report.devices], rows, "l" + "r" * len(report.devices)), ""]
    for m in report.models:
        out += _model(report, m, chart_dir)
    out += llm_markdown(report.llm, chart_dir) + memory_markdown(report.memory)
    out += [
        "### Devices",
        "",
        _table(
            ["device", "transport", "target", "status", "abi", "cores", "frequencies", "governor", "temperatures"],
            [
                [f.device, f.transport, f.target, f.status, f.abi, f.cores, f.frequencies, f.governor, f.temperatures]
                for f in report.facts
            ],
        ),
        "",
    ]
    if report.numerics is not None:
        from orchestrator.numerics.render import render_markdown as numerics_markdown

        out += [numerics_markdown(report.numerics), ""]
    elif report.numerics_error is not None:
        out += ["### Numerics", "", f"not available: {report.numerics_error}", ""]
    out += [
        "<details><summary>How these numbers were computed</summary>",
        "",
        *(f"- {m}" for m in report.methods),
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in report.versions),
        "",
        "</details>",
        "",
    ]
    return "\n".join(out)


def _model(report: Report, m: ModelSection, chart_dir: str | None) -> list[str]:
    out = [f"### {m.name} ({m.backend})", ""]
    out += _latency(report, m)
    if chart_dir:
        out += [f"![{c.title}]({chart_dir}/{c.stem}.svg)" for c in m.charts] + [""]
    out += _top_ops(m)
    if len(m.latency) > 1 and m.op_ratios:
        out += _op_ratios(report, m)
    if m.history:
        out += _history(m)
    else:
        out += ["_No history: this model has no earlier runs in the results store._", ""]
    return out


def _latency(report: Report, m: ModelSection) -> list[str]:
    rows = [
        [
            d.device + (" 🏁" if d.fastest else ""),
            str(d.runs),
            ms(d.p50_ms),
            ms(d.p90_ms),
            pct(d.cv),
            f"{d.p90_over_p50:.2f}" if d.p90_over_p50 is not None else "-",
            ms(d.untraced_p50_ms),
            pct(d.tracer_overhead, signed=True),
            ms(d.load_p50_ms),
            d.verification,
            "baseline" if d.device == report.baseline else f"{ratio(d.ratio)} {interval(d.ratio_ci)}",
        ]
        for d in m.latency
    ]
    out = [
        _table(
            [*LATENCY_HEADERS, f"vs {report.baseline or '-'} (95% CI)"],
            rows,
            "lrrrrrrrrlr",
        ),
        "",
    ]
    out += [f"- ⚠ **{d.device}** {f.kind}: {f.reason}" for d in m.latency for f in d.flags]
    if any(d.flags for d in m.latency):
        out.append("")
    return out


def _top_ops(m: ModelSection) -> list[str]:
    out: list[str] = []
    for ops in m.ops:
        top = ops.top[:5]
        out += [
            f"**{ops.device}**: top {len(top)} events",
            "",
            _table(
                ["event", "p50 ms", "share", "module path", "delegated"],
                [
                    [
                        clip(op.name, 48),
                        ms(op.p50_ms),
                        pct(op.share),
                        op.module_path or (f"delegate over {clip(op.covers.replace(';', ', '), 60)}" if op.covers else "-"),
                        op.backend if op.delegated else "no",
                    ]
                    for op in top
                ],
                "lrrll",
            ),
            "",
        ]
    return out


def _op_ratios(report: Report, m: ModelSection) -> list[str]:
    devices = [d.device for d in m.latency]
    return [
        f"Ops across devices, p50 ms (ratio to {report.baseline}):",
        "",
        _table(
            ["event", *devices],
            [
                [
                    clip(r.name, 48),
                    *(f"{ms(p)} ({ratio(x)})" if p is not None else "-" for p, x in zip(r.p50_ms, r.ratio, strict=False)),
                ]
                for r in m.op_ratios[:10]
            ],
            "l" + "r" * len(devices),
        ),
        "",
    ]


def _history(m: ModelSection) -> list[str]:
    devices = [d.device for d in m.latency]
    return [
        "Last runs, end-to-end p50 ms:",
        "",
        _table(
            ["run", "started", *devices],
            [
                [
                    r.run_id,
                    r.started,
                    *(ms(p) if p is not None else (st or "not run") for p, st in zip(r.p50_ms, r.status, strict=False)),
                ]
                for r in m.history_rows
            ],
            "ll" + "r" * len(devices),
        ),
        "",
    ]


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None) -> str:
    align = align or "l" * len(headers)
    marks = ["---:" if a == "r" else "---" for a in align]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"

    return "\n".join([line(headers), "|" + "|".join(marks) + "|", *(line(r) for r in rows)])
