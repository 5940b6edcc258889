"""Text table of per-event statistics (records: one dict per event; no pandas); stats.csv is profiles/stat_rows.py's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orchestrator.base.stats import UNSTABLE_CV, is_unstable
from orchestrator.profiles.op_identity import FRAMEWORK_EVENTS, HIDDEN_WHEN_PRINTING
from orchestrator.profiles.source import op_where, short_op_types
from orchestrator.report.formats import clip, fmt_ms, fmt_percent, time_column
from orchestrator.report.terminal.table import format_table

_RIGHT_ALIGNED = {"#", "samples", "cv", *(f"{key} {unit}" for key in ("avg", "p50", "p90") for unit in ("ms", "us"))}


def format_report(records: Sequence[dict[str, Any]], top: int = 20) -> str:
    """End-to-end and load lines, then the `top` events by avg time (0 = all)."""
    lines = [
        f"{r['event_name']:<21} [{r['event_block']}] p50 {fmt_ms(r['p50_ms'])}  p90 {fmt_ms(r['p90_ms'])}"
        f"  avg {fmt_ms(r['avg_ms'])}  cv {fmt_percent(r['cv'])}  ({int(r['samples'])} samples)"
        for r in records
        if r["event_name"] in FRAMEWORK_EVENTS
    ]
    ops = [r for r in records if r["event_name"] not in FRAMEWORK_EVENTS and r["event_name"] not in HIDDEN_WHEN_PRINTING]
    ops.sort(key=lambda r: -r["avg_ms"])
    shown = ops[:top] if top > 0 else ops
    if lines:
        lines.append("")
    lines.append(f"top {len(shown)} of {len(ops)} events by avg time; ! = cv above {UNSTABLE_CV:.0%}")
    with_ops = any("op_types" in r for r in shown)
    times = {key: time_column([r[f"{key}_ms"] for r in shown]) for key in ("avg", "p50", "p90")}  # a unit per column
    headers = ["block", "#", "event", *(["op types", "module", "source"] if with_ops else []), "samples",
               *(f"{key} {column.unit}" for key, column in times.items()), "cv", ""]
    rows = []
    for k, r in enumerate(shown):
        cells = [str(r["event_block"]), str(r["event_index"]), clip(str(r["event_name"]), 40)]
        if with_ops:
            cells.append(clip(_op_summary(r.get("op_types")), 36))
            cells.append(clip(op_where(r.get("module_path"), r.get("delegate_covers")), 56))
            cells.append(clip(str(r.get("source_line") or ""), 32))
        unstable = "!" if is_unstable(r["cv"]) else ""
        cells += [
            str(int(r["samples"])),
            *(column.cells[k] for column in times.values()),
            fmt_percent(r["cv"]),
            unstable,
        ]
        rows.append(cells)
    lines.append(format_table(headers, rows, "".join("r" if h in _RIGHT_ALIGNED else "l" for h in headers)))
    return "\n".join(lines)


def _op_summary(op_types: Any) -> str:
    """'aten.addmm.default;aten.permute_copy.default' -> 'addmm,permute_copy'."""
    short = short_op_types(op_types)
    return ",".join(short[:3]) + (f" +{len(short) - 3}" if len(short) > 3 else "")
