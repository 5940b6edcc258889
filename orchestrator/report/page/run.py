"""A run's own sections: which device is fast enough, what to trust, and per model its latency, ops and history.

Which device is fast enough answers first (the claim, only as strong as the statistics allow:
builders/claims.py), then what to trust (flagged and excluded runs, the tracer's cost: builders/trust.py),
then per model the latency side by side, where each device spends its time, how ops compare across
devices, how that changed over time. Every sentence is composed here from the report data, once,
for both formats; page/sections.py puts these sections in the page's order.
"""

from __future__ import annotations

from orchestrator.profiles.kernel_align import operator_family
from orchestrator.profiles.op_identity import DELEGATE, event_group
from orchestrator.profiles.source import MODULES_SEPARATOR, short_op_types
from orchestrator.report.builders.trust import WORRYING, trust_summary
from orchestrator.report.formats import clip, fmt_ms, fmt_percent, interval, op_ms, ratio, tracer_cost
from orchestrator.report.model import DeviceLatency, DeviceOps, ModelSection, OpStat, Report, SpeedClaim, TracerOverhead
from orchestrator.report.page.blocks import (
    Block,
    Bullets,
    Figure,
    Grid,
    Paragraph,
    RunView,
    Section,
    Span,
    Table,
    Text,
    anchor,
    badge,
    code,
    joined,
    link,
    muted,
    strong,
    text,
)
from orchestrator.report.page.quantized import quantized_box
from orchestrator.report.page.rollups import rollup_section

# ---- which device is fast enough -------------------------------------------------------------


def claim_text(model: ModelSection) -> Text:
    """One sentence per model: the fastest device with how much faster, or why no device is called fastest."""
    claim = model.claim or SpeedClaim(None, None, None, reason="no device produced a result")
    name = strong(model.name)
    if claim.leader is None:
        return text(name, ": ", badge("no result", "bad"), f" {claim.reason}.")
    versus = joined([text(f"{ratio(v.speedup)} faster than ", strong(v.other), f" {interval(v.interval)}")
                     for v in claim.versus], "; ")
    if claim.fastest is not None:
        return text(name, ": ", badge("fastest", "good"), " ", strong(claim.leader), f" at {fmt_ms(claim.leader_p50_ms)} "
                    "ms p50, ", versus, ".")
    if not claim.versus:
        return text(name, ": ", strong(claim.leader), f" at {fmt_ms(claim.leader_p50_ms)} ms p50 ({claim.reason}).")
    return text(name, ": ", badge("no clear difference", "info", claim.reason), " ", strong(claim.leader),
                f" has the lowest p50 ({fmt_ms(claim.leader_p50_ms)} ms): ", versus, f"; {claim.reason}.")


def summary_section(view: RunView) -> tuple[Section, ...]:
    report, prefix = view.report, view.prefix
    headers = ("model", *(device_heading(report, d) for d in report.devices))
    rows = []
    for m in report.models:
        by_device = {d.device: d for d in m.latency}
        rows.append((text(link(m.name, "#" + anchor(f"{prefix}model", m.name))),
                     *(_summary_cell(by_device.get(dev), report.baseline) for dev in report.devices)))
    llm = " (an LLM's execution: one whole generation, prefill and every decode step; its time to first token and " \
          "tokens/s follow)" if any(m.unit == "generation" for m in report.models) else ""
    note = text(muted(f"End-to-end p50 per execution{llm}, ratio of p50s to {report.baseline or '-'} with its 95 % "
                      "interval over process runs; badges say why a number should not be taken at face value."))
    return (Section(text("Which device is fast enough?" + view.label), f"{prefix}summary", (
        *(quantized_box(report) if report.matrix is None else ()),  # else the matrix's box, above, says it
        Paragraph(joined([claim_text(m) for m in report.models], " "), tone="answer"),
        Table(headers, tuple(rows), (False, *([True] * len(report.devices)))),
        Paragraph(note)), nav="summary"),)


def device_heading(report: Report, device: str) -> str:
    """A device's column heading: an emulated device says so wherever its timings are shown."""
    return f"{device} (emulated)" if device in report.emulated else device


def _summary_cell(d: DeviceLatency | None, baseline: str | None) -> Text:
    if d is None:
        return text(muted("not run"))
    if d.p50_ms is None:
        return text(badge("failed", "bad", d.error or ""))
    parts: list[str | Span] = [strong(f"{fmt_ms(d.p50_ms)} ms")]
    if d.device == baseline:
        parts += [" ", badge("baseline", "info")]
    elif d.ratio is not None:
        parts += [f" · {ratio(d.ratio)} ", muted(interval(d.ratio_ci))]
    if d.fastest:
        parts += [" ", badge("fastest", "good")]
    for flag in d.flags:
        parts += [" ", flag_badge(flag.kind, flag.reason)]
    return text(*parts)


def flag_badge(kind: str, reason: str) -> Span:
    return badge(kind, "bad" if kind in ("failed", "verification") else "warn", reason)


# ---- what to trust ---------------------------------------------------------------------------


def trust_section(view: RunView) -> tuple[Section, ...]:
    notes = view.report.trust
    items = [text(strong(n.device), (" " + n.model) if n.model else "", ": ", flag_badge(n.kind, "") if n.kind in
                  WORRYING else muted(n.kind), " ", n.text) for n in notes]
    summary = trust_summary(notes)
    if summary is not None:
        items.insert(0, text(summary))
    return (Section(text("What to trust" + view.label), f"{view.prefix}trust", (Bullets(tuple(items), tone="flags"),),
                    nav="trust"),)


# ---- per model -------------------------------------------------------------------------------


def model_sections(view: RunView) -> tuple[Section, ...]:
    """A section per model, listed in the navigation by the model's name."""
    return tuple(model_section(view, m) for m in view.report.models)


def model_section(view: RunView, m: ModelSection) -> Section:
    report = view.report

    def figure(kind: str) -> tuple[Block, ...]:
        chart = view.charts.of(m.name, kind)
        return (Figure(chart),) if chart is not None else ()

    blocks: list[Block] = [Section(text("End-to-end latency, devices side by side"), level=3,
                                   blocks=(latency_table(report, m), *_flag_reasons(m), *figure("latency")))]
    where: list[Block] = [*figure("op-groups"), Grid(tuple(top_ops_table(o) for o in m.ops))] if m.ops else [
        Paragraph(text(muted("no per-op statistics (no device produced an ETDump)")))]
    blocks.append(Section(text("Where each device spends its time"), level=3, blocks=tuple(where)))
    rolled = rollup_section(m)
    if rolled is not None:
        blocks.append(rolled)
    if len(m.latency) > 1 and m.op_ratios:
        blocks.append(Section(text(f"Ops across devices: p50 relative to {report.baseline or '-'}"), level=3,
                              blocks=(*figure("op-heatmap"), op_ratio_table(m))))
    blocks.append(Section(text("Over time"), level=3, blocks=(*figure("history"), *history_blocks(m))))
    return Section(text(f"Model {m.name} ", muted(f"({m.backend})"), view.label), anchor(f"{view.prefix}model", m.name),
                   tuple(blocks), nav=m.name)


LATENCY_HEADERS = ("device", "runs", "p50 ms", "p90 ms", "spread in a run", "between runs", "untraced p50",
                   "tracer cost", "load p50 ms", "first execution p50 ms", "verified")


def _tracer_title(tracer: TracerOverhead | None) -> str:
    """On hover: the measured figure behind "within noise", and why a figure is unreliable."""
    if tracer is None or tracer.overhead is None:
        return ""
    measured = f"measured {fmt_percent(tracer.overhead, signed=True)}" if tracer.within_noise else ""
    return "; ".join(t for t in (measured, tracer.note) if t)


def latency_table(report: Report, m: ModelSection) -> Table:
    rows = []
    for d in m.latency:
        tracer = d.tracer
        overhead = tracer_cost(tracer)
        load = fmt_ms(d.load_p50_ms) + (f" (cold {fmt_ms(d.cold_load_ms)})" if d.cold_load_ms is not None else "")
        rows.append((
            text(strong(d.device) if d.fastest else d.device), text(str(d.runs)), text(fmt_ms(d.p50_ms)), text(fmt_ms(d.p90_ms)),
            text(fmt_percent(d.within_spread)), text(fmt_percent(d.between_spread)), text(fmt_ms(d.untraced_p50_ms)),
            text(Span(overhead, title=_tracer_title(tracer))), text(load),
            text(Span(fmt_ms(d.first_execution_ms),
                      title="the first execution in a fresh process (its first warmup), p50 over process runs")),
            text(badge(d.verification, {"pass": "good", "fail": "bad"}.get(d.verification, "info"),
                       d.verification_detail)),
            text("baseline" if d.device == report.baseline else ratio(d.ratio)), text(interval(d.ratio_ci)),
            _badges(d),
        ))
    headers = (*LATENCY_HEADERS, f"p50 / {report.baseline or '-'}", "95% interval", "flags")
    return Table(headers, tuple(rows), (False, *([True] * 9), False, True, True, False))


def _badges(d: DeviceLatency) -> Text:
    found = ([text(badge("fastest", "good"))] if d.fastest else []) + [text(flag_badge(f.kind, f.reason)) for f in d.flags]
    return joined(found, " ") or text("-")


def _flag_reasons(m: ModelSection) -> tuple[Block, ...]:
    items = tuple(text(strong(d.device), f" {f.kind}: {f.reason}") for d in m.latency for f in d.flags)
    return (Bullets(items, tone="flags"),) if items else ()


def top_ops_table(ops: DeviceOps) -> Table:
    rows = tuple((text(clip(op.name, 48)), text(op_ms(op.avg_ms, op.below_resolution, op.delegated)),
                  text(fmt_percent(op.share)), what(op), text(op.backend if op.delegated else "no")) for op in ops.top)
    return Table(("event", "mean ms", "share", "in your model", "delegated"), rows, (False, True, True, False, False),
                 caption=text(strong(ops.device), f": top {len(ops.top)} events by mean time"))


def what(op: OpStat) -> Text:
    """Where the event is in the user's model: a mapped kernel's own module and line; an unmapped kernel or a
    delegate call, the modules the delegate covers (and why it is not mapped); an op, its module and types."""
    parts: list[Text] = []
    if op.kernel == "mapped":
        parts.append(text(code(op.module_path or "(model)")))
        if op.kernel_note:
            parts.append(text(muted(op.kernel_note)))
    elif op.module_path:
        parts.append(text(code(clip(op.module_path, 60))))
    elif op.covers:
        modules = [m for m in op.covers.split(MODULES_SEPARATOR) if m]
        shown = ", ".join(modules) if len(modules) <= 2 else f"{modules[0]} … {modules[-1]} ({len(modules)})"
        parts.append(text(muted("delegate over "), code(shown)))
        if op.kernel == "unmapped" and op.kernel_note:
            parts.append(text(muted(f"not mapped: {op.kernel_note}")))
    if op.op_types:
        short = short_op_types(op.op_types)
        parts.append(text(", ".join(short[:4]) + (f" +{len(short) - 4}" if len(short) > 4 else "")))
    if op.source_line:
        parts.append(text(muted(op.source_line)))
    return joined(parts, " · ") or text(muted("-"))


def op_ratio_table(m: ModelSection) -> Table:
    """One row per op of the user's model (joined by identity, not by kernel name): each device's p50, its ratio to
    the baseline and the ratio's interval; under the op, each device's kernel where their names differ."""
    devices = [d.device for d in m.latency]
    rows = []
    for r in m.op_ratios:
        below = r.below_resolution or (False,) * len(devices)
        cis = r.ratio_ci or (None,) * len(devices)
        cells = tuple(text(op_ms(p, b), " ", muted(ratio(x)), *((" ", muted(interval(ci))) if ci else ()))
                      if p is not None else text("-")
                      for p, x, b, ci in zip(r.p50_ms, r.ratio, below, cis, strict=False))
        op = text(clip(r.name, 40), *((" ", muted("(delegate call)")) if r.basis == DELEGATE else ()))
        kernels = kernel_label(r.kernels, devices)
        rows.append((joined([op, text(muted(kernels))], " · ") if kernels else op,
                     text(code(r.module_path)) if r.module_path else text("-"), *cells))
    return Table(("op", "module", *(f"{d} p50 ms, ratio [95%]" for d in devices)), tuple(rows),
                 (False, False, *([True] * len(devices))))


def kernel_label(kernels: tuple[str, ...], devices: list[str]) -> str:
    """Each device's kernel for one op where their names differ: `(NHWC, F32) IGEMM on local, (NHWC, PF32) IGEMM on
    rpi5` (the shared family and `#k` left out); '' when every device named it alike."""
    groups = [event_group(k) for k in kernels]
    if len({g for g in groups if g}) < 2:
        return ""
    return ", ".join(f"{g.removeprefix(operator_family(g)).strip() or g} on {d}"
                     for g, d in zip(groups, devices, strict=False) if g)


def history_blocks(m: ModelSection) -> tuple[Block, ...]:
    if not m.history:
        return (Paragraph(text(muted("no history: this model has no earlier runs in the results store"))),)
    devices = [d.device for d in m.latency]
    rows = tuple((text(code(r.run_id)), text(r.started), text(r.configuration or "-"),
                  text(code((r.git_commit or "-")[:10])),
                  *(text(fmt_ms(p)) if p is not None else text(muted(st or "not run"))
                    for p, st in zip(r.p50_ms, r.status, strict=False)))
                 for r in m.history_rows)
    return (Table(("run", "started", "configuration", "model commit", *(f"{d} p50 ms" for d in devices)), rows,
                  (False, False, False, False, *([True] * len(devices)))),)
