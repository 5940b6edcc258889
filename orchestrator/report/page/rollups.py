"""A model's roll-ups on the run page (profiles/rollups.py): time per module subtree (self and total, a profiler's
call tree) and the summary by op type (count, total, share: benchmark_model's), the devices side by side."""

from __future__ import annotations

from orchestrator.profiles.rollups import ModuleTime, Rollup
from orchestrator.report.formats import fmt_ms, fmt_percent
from orchestrator.report.model import ModelSection
from orchestrator.report.page.blocks import Section, Table, code, muted, text
from orchestrator.report.terminal.rollups import OP_TYPE_ROWS, shown_modules

INDENT = "\u00a0\u00a0"  # a tree level (non-breaking: HTML keeps it)


def rollup_section(m: ModelSection) -> Section | None:
    """"Time by module and op type": None when no device has per-op statistics."""
    rollups = [r for r in m.rollups if r.op_types]
    if not rollups:
        return None
    devices = [r.device for r in rollups]
    return Section(text("Time by module and by op type"), level=3, blocks=(
        Table(("module", *(f"{d}: self / total ms, share" for d in devices)), _module_rows(rollups),
              (False, *([True] * len(devices)))),
        Table(("op type", *(f"{d}: count, total ms, share" for d in devices)), _op_type_rows(rollups),
              (False, *([True] * len(devices)))),
    ))


def _module_rows(rollups: list[Rollup]) -> tuple[tuple, ...]:
    order: dict[str, ModuleTime] = {}
    for r in rollups:  # every device's shown tree, the first device's order first
        for module in shown_modules(r.modules):
            order.setdefault(module.module, module)
    found = [{mt.module: mt for mt in r.modules} for r in rollups]
    rows = []
    for name, first in order.items():
        cells = [text(fmt_ms(mt.self_ms), " / ", fmt_ms(mt.total_ms), " ", muted(fmt_percent(mt.share)))
                 if (mt := f.get(name)) else text("-") for f in found]
        rows.append((text(INDENT * first.depth, code(name) if first.depth else name), *cells))
    return tuple(rows)


def _op_type_rows(rollups: list[Rollup]) -> tuple[tuple, ...]:
    kinds = list(dict.fromkeys(t.op_type for r in rollups for t in r.op_types[:OP_TYPE_ROWS]))
    found = [{t.op_type: t for t in r.op_types} for r in rollups]
    return tuple((text(kind), *(text(str(t.count), " · ", fmt_ms(t.total_ms), " ", muted(fmt_percent(t.share)))
                                if (t := f.get(kind)) else text("-") for f in found)) for kind in kinds)
