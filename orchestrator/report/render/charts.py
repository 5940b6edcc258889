"""A report's charts, drawn with matplotlib (Agg) to inline SVG text for the pages that show them.

Per model: latency distribution, time per op group, op x device heatmap, history trend; per LLM:
decode latency by step; per model under export recipes: latency against accuracy per device. Charts
are rendering: the report's data (report/model/) is built without them, and `report_charts` draws
them only for HTML and Markdown; the page places them by model and kind (page/blocks.py `Charts`).

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
from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.base.words import counted
from orchestrator.report.builders.report import DEVICE_PALETTE as PALETTE
from orchestrator.report.formats import clip as _clip
from orchestrator.report.formats import fmt_ms, fmt_rate
from orchestrator.report.formats import ratio as _ratio
from orchestrator.report.model import LlmSection, ModelSection, RecipeGroup, Report
from orchestrator.report.page.blocks import Chart, Charts
from orchestrator.report.page.quantized import CHART_KIND as LATENCY_ACCURACY
from orchestrator.run.configuration import configuration_label, varying_settings

# Op groups get colours of their own (ColorBrewer Set3), so no group is mistaken for a device.
GROUP_PALETTE = ("#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5", "#bc80bd", "#ccebc5")
OTHER_COLOUR = "#D0D0D0"
WIDE_RANGE = 20.0  # devices this many times apart: latency on a log axis, op groups as shares
WIDTH_IN = 8.5  # plot area
CHAR_IN = 0.068


def report_charts(report: Report) -> Charts:
    """Every chart of the report: each model's, each quantized model's latency against accuracy, then each LLM's
    decode steps, in the device colours the report chose (report.colours), the same in every chart."""
    colours = dict(report.colours)
    drawn = [(m.name, kind, chart) for m in report.models for kind, chart in model_charts(m, colours, report.baseline)]
    drawn += [(g.name, LATENCY_ACCURACY, chart) for g in report.quantized
              if (chart := _latency_accuracy(g, colours)) is not None]
    drawn += [(s.model, "decode-steps", chart) for s in report.llm if (chart := _decode_steps(s, colours)) is not None]
    return Charts(tuple(drawn))


def model_charts(section: ModelSection, colours: Mapping[str, str], baseline: str | None) -> tuple[tuple[str, Chart], ...]:
    """(kind, chart): latency distribution, time per op group, op x device heatmap, history trend (when there is
    data). `colours`: one colour per device (report.colours), the same in every chart of the report."""
    _setup()
    charts = []
    for kind, make in (("latency", _latency), ("op-groups", _groups), ("op-heatmap", _heatmap), ("history", _history)):
        chart = make(section, baseline, colours)
        if chart is not None:
            charts.append((kind, chart))
    return tuple(charts)


def _setup() -> None:
    import matplotlib

    matplotlib.rcParams.update(
        {
            "svg.fonttype": "none",
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.titlesize": 10,
            "axes.titleweight": "bold",
        }
    )


def _figure(
    plot_w_in: float,
    plot_h_in: float,
    left_labels: Sequence[str],
    right_in: float = 0.25,
    bottom_in: float = 0.55,
    top_in: float = 0.4,
) -> tuple[Any, Any]:
    """A figure whose margins are sized from its labels, so no tight-bbox pass (a second full draw,
    a third of the report's time) is needed. 9 pt text: about 0.068 in per character."""
    # matplotlib.figure, not pyplot: no global figure registry, no GUI backend, 0.2-0.4 s less to import.
    from matplotlib.figure import Figure

    left_in = 0.3 + CHAR_IN * max((len(label) for label in left_labels), default=4)
    width, height = left_in + plot_w_in + right_in, bottom_in + plot_h_in + top_in
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(left=left_in / width, right=1 - right_in / width, bottom=bottom_in / height, top=1 - top_in / height)
    return fig, fig.subplots()


def _svg(fig: Any, stem: str, titles: dict[str, str]) -> str:
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = stem
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]  # drop the XML prolog and DOCTYPE: the SVG is inlined into HTML
    for gid, title in titles.items():
        text = text.replace(f'<g id="{gid}">', f'<g id="{gid}"><title>{html.escape(title)}</title>', 1)
    return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)


def _latency(section: ModelSection, baseline: str | None, colours: Mapping[str, str]) -> Chart | None:
    rows = [d for d in section.latency if d.samples]
    if not rows:
        return None

    fig, ax = _figure(WIDTH_IN, 0.2 + 0.45 * len(rows), [d.device for d in rows], bottom_in=0.6)
    ax.boxplot(
        [d.samples for d in rows],
        orientation="horizontal",
        widths=0.5,
        showfliers=False,
        medianprops={"color": "#222"},
        boxprops={"color": "#666"},
        whiskerprops={"color": "#666"},
        capprops={"color": "#666"},
    )
    titles = {}
    for i, d in enumerate(rows):
        # One dot per process run (its median): the replication unit; 500 sample dots would say less, slower.
        points = ax.scatter(
            d.run_medians,
            [i + 1] * len(d.run_medians),
            s=22,
            alpha=0.8,
            color=colours.get(d.device, PALETTE[i % len(PALETTE)]),
            zorder=3,
            edgecolors="white",
            linewidths=0.5,
        )
        points.set_gid(f"lat-{i}")
        titles[f"lat-{i}"] = (
            f"{d.device}: p50 {fmt_ms(d.p50_ms)} ms, p90 {fmt_ms(d.p90_ms)} ms over {len(d.samples)} "
            f"{section.unit}s; run medians " + ", ".join(fmt_ms(m) for m in d.run_medians)
        )
    if _wide([d.p50_ms for d in rows if d.p50_ms]):
        ax.set_xscale("log")
    ax.set_yticks(range(1, len(rows) + 1), [d.device for d in rows])
    ax.invert_yaxis()
    ax.set_xlabel(
        f"ms per {section.unit}"
        + (" (log scale)" if ax.get_xscale() == "log" else "")
        + f": box = all {section.unit}s (whiskers 1.5 IQR), dots = process-run medians"
    )
    ax.set_title(f"{section.name}: latency per device")
    ax.grid(axis="x", alpha=0.3)
    return Chart(
        f"{section.name}-latency",
        f"{section.name}: latency distribution per device",
        _svg(fig, f"{section.name}-latency", titles),
    )


def _groups(section: ModelSection, baseline: str | None, colours: Mapping[str, str]) -> Chart | None:
    if not section.ops:
        return None
    order = []
    for ops in section.ops:
        for group, _ in ops.groups:
            if group not in order and group != "other":
                order.append(group)
    order.append("other")
    group_colours = {g: GROUP_PALETTE[i % len(GROUP_PALETTE)] for i, g in enumerate(order[:-1])} | {"other": OTHER_COLOUR}
    legend_in = 0.6 + CHAR_IN * 0.9 * max(len(g) for g in order)
    fig, ax = _figure(
        WIDTH_IN - legend_in,
        max(0.2 + 0.4 * len(section.ops), 0.17 * len(order)),
        [o.device for o in section.ops],
        right_in=legend_in,
    )
    totals = [sum(v for _, v in ops.groups) for ops in section.ops]
    shares = _wide([t for t in totals if t > 0])  # a 300 ms board beside a 0.3 ms phone: compare shapes
    titles = {}
    for row, ops in enumerate(section.ops):
        times = dict(ops.groups)
        total = totals[row] or 1.0
        left = 0.0
        for col, group in enumerate(order):
            ms = times.get(group, 0.0)
            if ms <= 0:
                continue
            width = ms / total * 100.0 if shares else ms
            bar = ax.barh(
                row,
                width,
                left=left,
                height=0.6,
                color=group_colours[group],
                label=group if row == 0 or group not in dict(section.ops[0].groups) else None,
            )
            gid = f"grp-{row}-{col}"
            bar.patches[0].set_gid(gid)
            titles[gid] = f"{ops.device}: {group}: {fmt_ms(ms)} ms per {section.op_unit} ({ms / total:.0%})"
            left += width
    ax.set_yticks(range(len(section.ops)), [o.device for o in section.ops])
    ax.invert_yaxis()
    ax.set_xlabel(f"% of each device's mean time per {section.op_unit} (devices over 20x apart)" if shares
                  else f"mean ms per {section.op_unit}")
    ax.set_title(f"{section.name}: where the time goes, by op group")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=False))
    ax.legend(
        [unique[g] for g in order if g in unique],
        [g for g in order if g in unique],
        loc="center left",
        bbox_to_anchor=(1.01, 0.5),
        frameon=False,
        fontsize=8,
    )
    return Chart(
        f"{section.name}-op-groups",
        f"{section.name}: time per op group per device",
        _svg(fig, f"{section.name}-op-groups", titles),
    )


def _wide(values: Sequence[float]) -> bool:
    positive = [v for v in values if v > 0]
    return len(positive) > 1 and max(positive) / min(positive) > WIDE_RANGE


def _heatmap(section: ModelSection, baseline: str | None, colours: Mapping[str, str]) -> Chart | None:
    devices = [d.device for d in section.latency]
    rows = [r for r in section.op_ratios if any(x is not None for x in r.ratio)]
    if len(devices) < 2 or not rows:
        return None
    import numpy as np

    logs = np.array([[math.log2(x) if x and x > 0 else np.nan for x in r.ratio] for r in rows])
    limit = max(1.0, float(np.nanmax(np.abs(logs))) if np.isfinite(logs).any() else 1.0)
    labels = [_clip(r.name, 38) for r in rows]
    fig, ax = _figure(1.1 * len(devices), 0.28 * len(rows), labels, right_in=1.0, bottom_in=0.35)
    import matplotlib
    from matplotlib.colors import Normalize
    from matplotlib.patches import Rectangle

    cmap, norm = matplotlib.colormaps["RdBu_r"], Normalize(-limit, limit)
    titles = {}
    for i, r in enumerate(rows):
        for j, device in enumerate(devices):
            # One patch per cell (not pcolormesh, not text labels): each carries its hover text, and
            # drawing 45 labels cost more than the rest of the chart. The numbers are in the table below.
            value = r.ratio[j]
            colour = cmap(norm(math.log2(value))) if value and value > 0 else "#f0f0f0"
            cell = ax.add_patch(Rectangle((j, i), 1, 1, facecolor=colour, edgecolor="white", linewidth=1))
            gid = f"cell-{i}-{j}"
            cell.set_gid(gid)
            kernel = r.kernels[j] if j < len(r.kernels) and r.kernels[j] else ""
            titles[gid] = f"{r.name} on {device}{f' ({kernel})' if kernel else ''}: p50 {fmt_ms(r.p50_ms[j])} ms" + (
                f", {_ratio(value)} {baseline}" if value is not None else ""
            )
    ax.set_xlim(0, len(devices))
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([j + 0.5 for j in range(len(devices))], devices)
    ax.set_yticks([i + 0.5 for i in range(len(rows))], labels)
    ax.tick_params(length=0)
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"{section.name}: op p50 relative to {baseline}")
    from matplotlib.cm import ScalarMappable

    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, shrink=0.8, pad=0.03, fraction=0.08)
    bar.solids.set_rasterized(False)  # matplotlib embeds a bitmap otherwise
    top = math.ceil(limit)
    ticks = list(range(-top, top + 1, max(1, math.ceil(top / 2))))  # at most 5 labels
    bar.set_ticks(ticks, labels=[ratio_tick(t) for t in ticks])
    return Chart(
        f"{section.name}-op-heatmap",
        f"{section.name}: op x device ratio to {baseline}",
        _svg(fig, f"{section.name}-op-heatmap", titles),
    )


def ratio_tick(power: int) -> str:
    """A colour bar tick at 2^power, readable: `4x`, `1x`, `1/1024x` (never `0.000976562x`)."""
    return f"{2 ** power}x" if power >= 0 else f"1/{2 ** -power}x"


def _history(section: ModelSection, baseline: str | None, colours: Mapping[str, str]) -> Chart | None:
    """End-to-end p50 per run, a line per series (device and configuration: an xnnpack, a portable and a --numerics
    run of one model are three lines, never one through all), dashed for each further configuration of a device."""
    points = [p for p in section.history if p.e2e_p50_ms is not None]
    if not points:
        return None
    runs = list(dict.fromkeys(p.run_id for p in points))
    shown = varying_settings(p.settings for p in points)
    fig, ax = _figure(WIDTH_IN, 1.8, ["00.0000 + ylabel"], bottom_in=1.0)
    titles = {}
    series = list(dict.fromkeys((p.device, p.settings) for p in points))
    for i, (device, settings) in enumerate(series):
        mine = [p for p in points if (p.device, p.settings) == (device, settings)]
        name = f"{device} ({configuration_label(settings, shown)})" if shown else device
        nth = [s for d, s in series if d == device].index(settings)  # a device's further configurations: dashed
        line = ax.plot(
            [runs.index(p.run_id) for p in mine],
            [p.e2e_p50_ms for p in mine],
            marker="o",
            linestyle=("-", "--", ":", "-.")[nth % 4],
            color=colours.get(device, PALETTE[i % len(PALETTE)]),
            label=name,
        )[0]
        line.set_gid(f"hist-{i}")
        titles[f"hist-{i}"] = f"{name}: " + ", ".join(f"{p.run_id} {fmt_ms(p.e2e_p50_ms)} ms" for p in mine[-5:])
    labels = {p.run_id: p.started[5:16].replace("T", " ") for p in points}  # "11-22 08:51"
    ax.set_xticks(range(len(runs)), [labels[r] for r in runs], rotation=30, ha="right")
    values = [p.e2e_p50_ms for p in points if p.e2e_p50_ms > 0]
    if _wide(values):  # configurations apart by orders of magnitude (portable against xnnpack): each stays readable
        ax.set_yscale("log")
        ax.set_ylabel(f"e2e p50 ms per {section.unit} (log)")
    else:
        ax.set_ylabel(f"e2e p50 ms per {section.unit}")
        ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    ax.set_title(f"{section.name}: end-to-end p50 over the last {counted(len(runs), 'run')}")
    return Chart(f"{section.name}-history", f"{section.name}: history trend", _svg(fig, f"{section.name}-history", titles))


def _decode_steps(section: LlmSection, colours: Mapping[str, str]) -> Chart | None:
    """Decode step latency by step, one line per device (median over the generations), in the device's colour."""
    lines = [d for d in section.devices if d.step_ms]
    if not lines:
        return None
    _setup()
    stem = f"{section.model}-decode-steps"
    fig, ax = _figure(WIDTH_IN, 2.2, ["00.0000 + ylabel"], bottom_in=0.6)
    titles = {}
    for i, d in enumerate(lines):
        line = ax.plot(range(2, len(d.step_ms) + 2), d.step_ms, marker=".",
                       color=colours.get(d.device, PALETTE[i % len(PALETTE)]), label=d.device)[0]
        line.set_gid(f"steps-{i}")
        titles[f"steps-{i}"] = (f"{d.device}: decode {fmt_rate(d.decode_tokens_per_s)} tokens/s; step p50 from "
                                f"{fmt_ms(d.step_ms[0])} to {fmt_ms(d.step_ms[-1])} ms")
    ax.set_xlabel("generated token (token 1 comes from the prefill)")
    ax.set_ylabel("decode step p50 ms")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    ax.set_title(f"{section.model}: latency of each decode step")
    return Chart(stem, f"{section.model}: per-step decode latency", _svg(fig, stem, titles))


def _latency_accuracy(group: RecipeGroup, colours: Mapping[str, str]) -> Chart | None:
    """Each recipe of a model a point per device (docs/how-to/quantized.md): x the SNR of its outputs against the
    fp32 eager model (dB, higher is closer), y its end-to-end p50. A recipe whose outputs equal eager exactly has
    no SNR and is left out of the plot (its row in the table says so)."""
    points = [(d.device, r.recipe, r.accuracy.snr_db, r.p50_ms) for d in group.devices for r in d.rows
              if r.accuracy is not None and r.accuracy.snr_db is not None and r.p50_ms is not None]
    if not points:
        return None
    _setup()
    fig, ax = _figure(WIDTH_IN * 0.7, 2.6, ["0.000"], bottom_in=0.6)
    titles = {}
    for k, (device, recipe, snr, p50) in enumerate(points):
        dot = ax.scatter([snr], [p50], s=36, color=colours.get(device, PALETTE[k % len(PALETTE)]), zorder=3,
                         edgecolors="white", linewidths=0.5, label=device)
        dot.set_gid(f"rq-{k}")
        titles[f"rq-{k}"] = f"{device} {recipe}: p50 {fmt_ms(p50)} ms, SNR {snr:.1f} dB against fp32 eager"
        ax.annotate(recipe, (snr, p50), textcoords="offset points", xytext=(5, 4), fontsize=8)
    handles = {h.get_label(): h for h in ax.collections}  # one legend entry per device
    ax.legend(handles.values(), handles.keys(), fontsize=8, frameon=False, loc="best")
    ax.set_xlabel("SNR of the outputs against the fp32 eager model (dB, higher is closer)")
    ax.set_ylabel("p50 ms per execution")
    ax.set_title(f"{group.name}: latency against accuracy per device")
    ax.grid(alpha=0.3)
    stem = f"{group.name}-recipes"
    return Chart(stem, f"{group.name}: latency against accuracy per device", _svg(fig, stem, titles))
