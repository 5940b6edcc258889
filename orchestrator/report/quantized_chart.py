"""A chart of latency against accuracy per device: each recipe of a model is a point (README "Quantized models").

x: SNR of the recipe's outputs against the fp32 eager model (dB, higher is closer), y: end-to-end p50 (ms,
lower is faster); one colour per device (the report's), each point named by its recipe. A recipe whose
outputs equal eager exactly has no SNR and is left out of the plot (its row in the table says so).
matplotlib, through charts.py's figure and SVG helpers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from orchestrator.report.cells import DEVICE_PALETTE as PALETTE
from orchestrator.report.charts import WIDTH_IN, _figure, _setup, _svg
from orchestrator.report.model import Chart

if TYPE_CHECKING:
    from orchestrator.report.quantized import RecipeGroup


def latency_accuracy_chart(group: RecipeGroup, colours: Mapping[str, str]) -> Chart | None:
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
        titles[f"rq-{k}"] = f"{device} {recipe}: p50 {p50:.4g} ms, SNR {snr:.1f} dB against fp32 eager"
        ax.annotate(recipe, (snr, p50), textcoords="offset points", xytext=(5, 4), fontsize=8)
    handles = {h.get_label(): h for h in ax.collections}
    ax.legend(handles.values(), handles.keys(), fontsize=8, frameon=False, loc="best")
    ax.set_xlabel("SNR of the outputs against the fp32 eager model (dB, higher is closer)")
    ax.set_ylabel("p50 ms per execution")
    ax.set_title(f"{group.name}: latency against accuracy per device")
    ax.grid(alpha=0.3)
    stem = f"{group.name}-recipes"
    return Chart(stem, f"{group.name}: latency against accuracy per device", _svg(fig, stem, titles))
