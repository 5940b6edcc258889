"""The roll-ups in text (profiles/rollups.py): a module call tree with self and total time, and the summary by op
type, as a profiler and TFLite's benchmark_model print them."""

from __future__ import annotations

from orchestrator.profiles.rollups import ModuleTime, Rollup
from orchestrator.report.formats import fmt_percent
from orchestrator.report.terminal.table import format_table, timed

MODULE_ROWS = 25  # lines of the module tree printed
OP_TYPE_ROWS = 12
MIN_SHARE = 0.01  # a module under 1 % of the op time is left out of the printed tree (the files have all)


def shown_modules(modules: tuple[ModuleTime, ...]) -> list[ModuleTime]:
    """The tree as printed and drawn: the root, then modules with at least MIN_SHARE of the time, at most MODULE_ROWS."""
    return [m for m in modules if m.depth == 0 or (m.share or 0.0) >= MIN_SHARE][:MODULE_ROWS]


def format_rollup(r: Rollup) -> str:
    """Two tables for one (device, model): time by module (tree, self and total) and by op type."""
    title = f"{r.device} / {r.model}" if r.device else r.model or "ops"
    modules = shown_modules(r.modules)
    by_module = timed(["module", "ops", "self", "total", "share"],
                      [["  " * m.depth + m.module, m.ops, m.self_ms, m.total_ms, fmt_percent(m.share)] for m in modules],
                      (2, 3))  # a unit per column: us where every figure is under 1 ms
    lines = [f"{title}: time by module (mean per execution; total = the module and its submodules)",
             format_table(*by_module, "lrrrr")]
    left = len(r.modules) - len(modules)
    if left:
        lines.append(f"({left} smaller module{'s' if left != 1 else ''} not shown)")
    by_type = timed(["op type", "count", "total", "share"],
                    [[t.op_type, t.count, t.total_ms, fmt_percent(t.share)] for t in r.op_types[:OP_TYPE_ROWS]], (2,))
    lines += ["", f"{title}: time by op type", format_table(*by_type, "lrrr")]
    return "\n".join(lines)
