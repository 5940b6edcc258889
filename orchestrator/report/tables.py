"""Text table and CSV of per-event statistics (records: one dict per event; no pandas)."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator.errors import AnalysisError
from orchestrator.profiles.analysis_core import (
    FRAMEWORK_EVENTS,
    MODULES_SEPARATOR,
    OP_TYPES_SEPARATOR,
)

UNSTABLE_CV = 0.10  # flag, don't hide: a CV above this marks the row in printed tables
HIDDEN_WHEN_PRINTING = frozenset({"OPERATOR_CALL"})  # as Inspector: it is op + dispatch overhead
_RIGHT_ALIGNED = {"#", "samples", "avg", "p50", "p90", "cv"}


def format_report(records: Sequence[dict[str, Any]], top: int = 20) -> str:
    """End-to-end and load lines, then the `top` events by avg time (0 = all)."""
    lines = [
        f"{r['event_name']:<21} [{r['event_block']}] p50 {_ms(r['p50_ms'])}  p90 {_ms(r['p90_ms'])}"
        f"  avg {_ms(r['avg_ms'])}  cv {_pct(r['cv'])}  ({int(r['samples'])} samples)"
        for r in records
        if r["event_name"] in FRAMEWORK_EVENTS
    ]
    ops = [r for r in records if r["event_name"] not in FRAMEWORK_EVENTS and r["event_name"] not in HIDDEN_WHEN_PRINTING]
    ops.sort(key=lambda r: -r["avg_ms"])
    shown = ops[:top] if top > 0 else ops
    if lines:
        lines.append("")
    lines.append(f"top {len(shown)} of {len(ops)} events by avg time (ms); ! = cv above {UNSTABLE_CV:.0%}")
    with_ops = any("op_types" in r for r in shown)
    headers = ["block", "#", "event", *(["op types", "module", "source"] if with_ops else []), "samples", "avg", "p50",
               "p90", "cv", ""]
    rows = []
    for r in shown:
        cells = [str(r["event_block"]), str(r["event_index"]), _clip(str(r["event_name"]), 40)]
        if with_ops:
            cells.append(_clip(_op_summary(r.get("op_types")), 36))
            cells.append(_clip(op_where(r.get("module_path"), r.get("delegate_covers")), 56))
            cells.append(_clip(str(r.get("source_line") or ""), 32))
        unstable = "!" if _finite(r["cv"]) and r["cv"] > UNSTABLE_CV else ""
        cells += [str(int(r["samples"])), _ms(r["avg_ms"]), _ms(r["p50_ms"]), _ms(r["p90_ms"]), _pct(r["cv"]), unstable]
        rows.append(cells)
    lines.extend(_table(headers, rows))
    return "\n".join(lines)


def write_stats_csv(records: Sequence[dict[str, Any]], columns: Sequence[str], out: str | os.PathLike[str]) -> Path:
    """Write records as CSV with exactly `columns` (atomically: temp file, then rename)."""
    out_path = Path(out)
    tmp = out_path.with_name(f".{out_path.name}.tmp")
    try:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(columns)
            for r in records:
                writer.writerow([_csv_value(r.get(c)) for c in columns])
        os.replace(tmp, out_path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise AnalysisError(f"{out_path}: cannot write CSV: {exc.strerror or exc}") from None
    return out_path


def _csv_value(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return repr(value)  # shortest text that reads back as the same double
    return value


def op_where(module_path: Any, covers: Any) -> str:
    """Where an event is in the user's model: its module, e.g. `encoder.layers.0.attention{query,key}`.

    A delegate call shows its common module and, in braces, the submodules it covers (ancestors
    of another covered module left out); a kernel inside a delegate (no module of its own) shows
    `in` the delegate's modules; `(model)` is the top-level module itself."""
    module = module_path if isinstance(module_path, str) else ""
    modules = covers.split(MODULES_SEPARATOR) if isinstance(covers, str) and covers else []
    if not module and not modules:
        return ""
    prefix = ""
    if not module:
        module, prefix = _common_module(modules), "in "
    leaves = [m for m in modules if not any(o.startswith(m + ".") for o in modules)]
    inner = [m[len(module):].lstrip(".") for m in leaves if m != module and (not module or m.startswith(module + "."))]
    return prefix + (module or "(model)") + ("{" + ",".join(dict.fromkeys(inner)) + "}" if inner else "")


def _common_module(paths: Sequence[str]) -> str:
    parts = [p.split(".") for p in paths]
    common = parts[0]
    for other in parts[1:]:
        n = 0
        while n < min(len(common), len(other)) and common[n] == other[n]:
            n += 1
        common = common[:n]
    return ".".join(common)


def _op_summary(op_types: Any) -> str:
    """'aten.addmm.default;aten.permute_copy.default' -> 'addmm,permute_copy'."""
    if not isinstance(op_types, str) or not op_types:
        return ""
    ops = op_types.split(OP_TYPES_SEPARATOR)
    short = list(dict.fromkeys(o.split(".")[1] if o.startswith("aten.") and o.count(".") >= 2 else o for o in ops))
    return ",".join(short[:3]) + (f" +{len(short) - 3}" if len(short) > 3 else "")


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if h in _RIGHT_ALIGNED else c.ljust(w) for c, w, h in zip(cells, widths, headers)).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _ms(value: Any) -> str:
    if not _finite(value):
        return "-"
    return f"{value:.4f}" if value < 10 else f"{value:.2f}"


def _pct(value: Any) -> str:
    return f"{value:.1%}" if _finite(value) else "-"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
