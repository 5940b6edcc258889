"""Memory by owner as a stacked bar per device and model (a recipe is a model of its own: `mlp-int8-static`).

Each bar is one (device, model)'s split after its measured executions (results/footprint.py): program, planned,
delegate, runtime, other, in MiB, with the peak RSS as a tick, so the owners' sum and the peak are seen side by
side (fp32 against int8: the delegate's packed weights shrink). Hover text gives each owner in bytes and whether it
was counted or measured as a delta. matplotlib is imported in charts.py's helpers only.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.report.model import MemoryRow, Report
from orchestrator.report.page.blocks import Chart, Charts
from orchestrator.report.render.charts import WIDTH_IN, _figure, _setup, _svg
from orchestrator.results.footprint import OWNERS

KIND = "memory-owners"  # Charts.of(MEMORY_CHART_MODEL, KIND)
MEMORY_CHART_MODEL = ""  # not one model's: the whole run's
OWNER_COLOURS = {"program": "#80b1d3", "planned": "#b3de69", "delegate": "#fb8072", "runtime": "#fdb462",
                 "other": "#D0D0D0"}
MIB = float(1 << 20)


def memory_owner_chart(rows: Sequence[MemoryRow]) -> Chart | None:
    """None when no (device, model) has memory by owner."""
    bars = [(f"{r.device} {r.model}", r.by_owner) for r in rows if r.by_owner is not None]
    if not bars:
        return None
    _setup()
    fig, ax = _figure(WIDTH_IN * 0.75, 0.32 * len(bars) + 0.4, [label for label, _ in bars], bottom_in=0.9)
    titles = {}
    for y, (label, memory) in enumerate(bars):
        left = 0.0
        for owner in OWNERS:
            size = getattr(memory.by_owner, owner)
            how = "counted" if owner in memory.counted else "delta"
            (bar,) = ax.barh([y], [size / MIB], left=[left], height=0.6, color=OWNER_COLOURS[owner],
                             label=owner if y == 0 else None)
            bar.set_gid(f"mo-{y}-{owner}")
            titles[f"mo-{y}-{owner}"] = f"{label}: {owner} {size:,} bytes ({how})"
            left += size / MIB
        if memory.peak_rss_bytes:
            ax.plot([memory.peak_rss_bytes / MIB] * 2, [y - 0.4, y + 0.4], color="black", linewidth=1.5,
                    label="peak RSS" if y == 0 else None)
    ax.set_yticks(range(len(bars)), [label for label, _ in bars])
    ax.invert_yaxis()
    ax.set_xlabel("MiB after the measured executions (bar: owners; tick: peak RSS)")
    ax.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=6)
    ax.set_title("Memory by owner, per device and model")
    return Chart("memory-owners", "Memory by owner, per device and model", _svg(fig, "memory-owners", titles))


def with_memory_chart(charts: Charts, report: Report) -> Charts:
    """`charts` (charts.report_charts) and the run's memory by owner, when it has some."""
    owners = memory_owner_chart(report.memory)
    return charts if owners is None else Charts((*charts.drawn, (MEMORY_CHART_MODEL, KIND, owners)))
