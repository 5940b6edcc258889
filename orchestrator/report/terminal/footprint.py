"""Memory by owner and energy per inference in the terminal (issue 39): the summary's words, `history`'s table.

Formatting only, light (no numpy): the figures come from the results model (results/footprint.py, run/energy/) and,
for `history`, from the store's typed points (store/footprint_rows.py)."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.report.formats import format_bytes
from orchestrator.report.terminal.table import format_table
from orchestrator.results.energy_figures import ModelEnergy
from orchestrator.results.footprint import OWNERS
from orchestrator.results.model import ModelResult
from orchestrator.store import StoredJob

MIB = float(1 << 20)


def footprint_text(model: ModelResult) -> str:
    """'; by owner: program 32.0 MiB, ... (1.00 x peak RSS); energy 812.5 uJ per inference ...', or ''."""
    out = ""
    memory = model.memory
    if memory is not None:
        owners = ", ".join(f"{name} {format_bytes(getattr(memory.by_owner, name))}" for name in OWNERS)
        ratio = f" ({memory.owners_over_peak:.2f} x peak RSS)" if memory.owners_over_peak else ""
        out += f"; by owner: {owners}{ratio}"
    energy = model.energy
    if energy is not None:
        out += "; energy " + energy_words(energy)
    return out


def energy_words(e: ModelEnergy) -> str:
    """'812.5 uJ per inference [790.0, 835.0] (odpm), 95.0 mW above idle' or 'not available: REASON'."""
    if not e.available or e.uj_per_inference is None:
        return f"not available: {e.reason or 'not measured'}"
    low, high = e.uj_per_inference_low, e.uj_per_inference_high
    interval = f" [{low:.1f}, {high:.1f}]" if low is not None and high is not None else ""
    token = f", {e.uj_per_token:.1f} uJ per token" if e.uj_per_token is not None else ""
    power = f", {e.mw:.1f} mW above idle" if e.mw is not None else ""
    return f"{e.uj_per_inference:.1f} uJ per inference{interval} ({e.sensor}){token}{power}"


def footprint_history_table(runs: Sequence[StoredJob], devices: Sequence[str]) -> str:
    """Per (run, model) with either figure, each device's peak RSS (MiB) / energy per inference (uJ); "" when none."""
    rows = []
    for run in runs:
        for model in run.models:
            points = {p.device: p for p in run.points if p.model == model
                      and (p.peak_rss_bytes is not None or p.uj_per_inference is not None)}
            if points:
                rows.append([run.run_id, model, *(_cell(p.peak_rss_bytes, p.uj_per_inference)
                                                  if (p := points.get(d)) else "" for d in devices)])
    if not rows:
        return ""
    headers = ["run", "model", *(f"{d} peak RSS MiB / uJ per inference" for d in devices)]
    return "Memory and energy (memory by owner's peak; energy above idle)\n" + format_table(
        headers, rows, "ll" + "r" * len(devices))


def _cell(peak: int | None, uj: float | None) -> str:
    return f"{'-' if peak is None else f'{peak / MIB:.1f}'} / {'-' if uj is None else f'{uj:.1f}'}"
