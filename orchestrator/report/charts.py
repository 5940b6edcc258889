"""Charts of one model's report section, drawn with matplotlib (Agg) to inline SVG text.

Deterministic: `svg.hashsalt` is fixed per chart (ids are stable and unique across the charts
of one page), no date or creator in the metadata, jitter from a seeded generator; the same
run gives byte-identical SVG. Text stays text (`svg.fonttype=none`) so the page's font is
used and the SVG stays small. Hover text: bars and cells carry an SVG <title>, which matplotlib
does not write itself, so artists get a gid and the title is put into that group afterwards.
matplotlib is imported here only, inside functions.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Sequence
from typing import Any

from orchestrator.report.cells import clip as _clip
from orchestrator.report.cells import ms as _ms
from orchestrator.report.model import Chart, ModelSection

PALETTE = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974")
OTHER_COLOUR = "#D0D0D0"
WIDTH_IN = 10.0


def model_charts(section: ModelSection, devices: Sequence[str], baseline: str | None) -> tuple[Chart, ...]:
    """Latency distribution, time per op group, op x device heatmap, history trend (when there is data)."""
    plt = _pyplot()
    charts = []
    for make in (_latency, _groups, _heatmap, _history):
        chart = make(plt, section, baseline)
        if chart is not None:
            charts.append(chart)
    return tuple(charts)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False,
                         "axes.spines.right": False, "axes.titlesize": 10, "axes.titleweight": "bold"})
    return plt


def _svg(plt: Any, fig: Any, stem: str, titles: dict[str, str]) -> str:
    plt.rcParams["svg.hashsalt"] = stem
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # drop the XML prolog and DOCTYPE: the SVG is inlined into HTML
    for gid, title in titles.items():
        text = text.replace(f'<g id="{gid}">', f'<g id="{gid}"><title>{html.escape(title)}</title>', 1)
    return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)


def _latency(plt: Any, section: ModelSection, baseline: str | None) -> Chart | None:
    rows = [d for d in section.latency if d.samples]
    if not rows:
        return None
    import numpy as np

    rng = np.random.default_rng(0)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 0.9 + 0.45 * len(rows)))
    ax.boxplot([d.samples for d in rows], orientation="horizontal", widths=0.5, showfliers=False,
               medianprops={"color": "#222"}, boxprops={"color": "#666"}, whiskerprops={"color": "#666"},
               capprops={"color": "#666"})
    titles = {}
    for i, d in enumerate(rows):
        y = i + 1 + rng.uniform(-0.18, 0.18, len(d.samples))
        points = ax.scatter(d.samples, y, s=9, alpha=0.55, color=PALETTE[i % len(PALETTE)], zorder=3)
        points.set_gid(f"lat-{i}")
        titles[f"lat-{i}"] = f"{d.device}: p50 {_ms(d.p50_ms)} ms, p90 {_ms(d.p90_ms)} ms, {len(d.samples)} executions"
    ax.set_yticks(range(1, len(rows) + 1), [d.device for d in rows])
    ax.invert_yaxis()
    ax.set_xlabel("ms per execution (traced runs)")
    ax.set_title(f"{section.name}: latency per device")
    ax.grid(axis="x", alpha=0.3)
    return Chart(f"{section.name}-latency", f"{section.name}: latency distribution per device",
                 _svg(plt, fig, f"{section.name}-latency", titles))


def _groups(plt: Any, section: ModelSection, baseline: str | None) -> Chart | None:
    if not section.ops:
        return None
    order = []
    for ops in section.ops:
        for group, _ in ops.groups:
            if group not in order and group != "other":
                order.append(group)
    order.append("other")
    colours = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(order[:-1])} | {"other": OTHER_COLOUR}
    fig, ax = plt.subplots(figsize=(WIDTH_IN - 2.5, max(1.0 + 0.4 * len(section.ops), 0.3 + 0.17 * len(order))))
    titles = {}
    for row, ops in enumerate(section.ops):
        times = dict(ops.groups)
        total = sum(times.values()) or 1.0
        left = 0.0
        for col, group in enumerate(order):
            ms = times.get(group, 0.0)
            if ms <= 0:
                continue
            bar = ax.barh(row, ms, left=left, height=0.6, color=colours[group],
                          label=group if row == 0 or group not in dict(section.ops[0].groups) else None)
            gid = f"grp-{row}-{col}"
            bar.patches[0].set_gid(gid)
            titles[gid] = f"{ops.device}: {group}: {_ms(ms)} ms per execution ({ms / total:.0%})"
            left += ms
    ax.set_yticks(range(len(section.ops)), [o.device for o in section.ops])
    ax.invert_yaxis()
    ax.set_xlabel("mean ms per execution")
    ax.set_title(f"{section.name}: where the time goes, by op group")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend([unique[g] for g in order if g in unique], [g for g in order if g in unique], loc="center left",
              bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=8)
    return Chart(f"{section.name}-op-groups", f"{section.name}: time per op group per device",
                 _svg(plt, fig, f"{section.name}-op-groups", titles))


def _heatmap(plt: Any, section: ModelSection, baseline: str | None) -> Chart | None:
    devices = [d.device for d in section.latency]
    rows = [r for r in section.op_ratios if any(x is not None for x in r.ratio)]
    if len(devices) < 2 or not rows:
        return None
    import numpy as np

    logs = np.array([[math.log2(x) if x and x > 0 else np.nan for x in r.ratio] for r in rows])
    limit = max(1.0, float(np.nanmax(np.abs(logs))) if np.isfinite(logs).any() else 1.0)
    fig, ax = plt.subplots(figsize=(min(WIDTH_IN, 3.0 + 1.2 * len(devices)), 1.0 + 0.3 * len(rows)))
    import matplotlib

    cmap = matplotlib.colormaps["RdBu_r"].with_extremes(bad="#f0f0f0")
    image = ax.pcolormesh(np.ma.masked_invalid(logs), cmap=cmap, vmin=-limit, vmax=limit, edgecolors="white",
                          linewidth=1)  # vector cells, not an embedded bitmap
    ax.invert_yaxis()
    titles = {}
    for i, r in enumerate(rows):
        for j, device in enumerate(devices):
            value = r.ratio[j]
            text = ax.text(j + 0.5, i + 0.5, f"{value:.2f}x" if value is not None else "-", ha="center", va="center", fontsize=8,
                           color="white" if value and abs(math.log2(value)) > 0.6 * limit else "#222")
            gid = f"cell-{i}-{j}"
            text.set_gid(gid)
            titles[gid] = f"{r.name} on {device}: p50 {_ms(r.p50_ms[j])} ms" + (
                f", {value:.2f}x {baseline}" if value is not None else "")
    ax.set_xticks([j + 0.5 for j in range(len(devices))], devices)
    ax.set_yticks([i + 0.5 for i in range(len(rows))], [_clip(r.name, 38) for r in rows])
    ax.tick_params(length=0)
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"{section.name}: op p50 relative to {baseline}")
    bar = fig.colorbar(image, ax=ax, shrink=0.8, pad=0.02)
    bar.solids.set_rasterized(False)  # matplotlib embeds a bitmap otherwise
    ticks = list(range(-math.ceil(limit), math.ceil(limit) + 1))
    bar.set_ticks(ticks, labels=[f"{2.0 ** t:g}x" for t in ticks])
    return Chart(f"{section.name}-op-heatmap", f"{section.name}: op x device ratio to {baseline}",
                 _svg(plt, fig, f"{section.name}-op-heatmap", titles))


def _history(plt: Any, section: ModelSection, baseline: str | None) -> Chart | None:
    points = [p for p in section.history if p.e2e_p50_ms is not None]
    if not points:
        return None
    runs = list(dict.fromkeys(p.run_id for p in points))
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 2.6))
    titles = {}
    for i, device in enumerate(dict.fromkeys(p.device for p in points)):
        mine = [p for p in points if p.device == device]
        line = ax.plot([runs.index(p.run_id) for p in mine], [p.e2e_p50_ms for p in mine], marker="o",
                       color=PALETTE[i % len(PALETTE)], label=device)[0]
        line.set_gid(f"hist-{i}")
        titles[f"hist-{i}"] = f"{device}: " + ", ".join(f"{p.run_id} {_ms(p.e2e_p50_ms)} ms" for p in mine[-5:])
    labels = {p.run_id: p.started[:10] for p in points}
    ax.set_xticks(range(len(runs)), [labels[r] for r in runs], rotation=30, ha="right")
    ax.set_ylabel("e2e p50 ms")
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    ax.set_title(f"{section.name}: end-to-end p50 over the last {len(runs)} runs")
    return Chart(f"{section.name}-history", f"{section.name}: history trend",
                 _svg(plt, fig, f"{section.name}-history", titles))

