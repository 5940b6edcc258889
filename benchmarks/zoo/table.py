"""The "Model zoo" section of benchmarks/README.md from the zoo's rows: one row per (model, recipe, device).

The export columns (time, phases, etfarm's own share, program size) are the configuration's, shown on its first
device's row. The section replaces the README's previous "## Model zoo" up to the next "## " heading.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from benchmarks.zoo.catalog import ZOO
from benchmarks.zoo.figures import ZooRow

HEADING = "## Model zoo"
_CHECKOUT = re.compile(r"/[^\s']*?/(?=(?:benchmarks|configs)/)")
SHORT = {"eager run": "eager", "capture": "cap", "calibration": "cal", "quantization": "quant", "lowering": "lower",
         "ETRecord": "etr", "host reference": "ref", "per-layer replay": "replay"}
COLUMNS = ("model", "recipe", "device", "export s", "phases s", "etfarm's own", "program", "p50 ms",
           "speed-up vs fp32 [95% CI]", "SNR dB", "top-1", "outside delegate", "left out / failed: why")


def section(rows: Sequence[ZooRow], intro: str) -> str:
    families = {m.name: m.family for m in ZOO}
    lines = [HEADING, "", intro, "", "| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    shown: set[tuple[str, str]] = set()
    for row in rows:
        first = (row.model, row.recipe) not in shown
        shown.add((row.model, row.recipe))
        export = _export_cells(row) if first else ["", "", "", ""]
        model = f"{row.model} ({families.get(row.model, '')})" if first and row.recipe == "fp32" else row.model
        cells = [model, row.recipe, row.device, *export, _num(row.p50_ms, "{:.3f}"), _speedup(row),
                 _num(row.snr_db, "{:.1f}"), _num(row.top1, "{:.0%}"), _outside(row), _why(row)]
        lines.append("| " + " | ".join(cells) + " |")
    measured = sum(r.measured for r in rows)
    missing = [m.name for m in ZOO if m.name not in {r.model for r in rows}]
    lines += ["", f"{measured} of {len(rows)} (configuration, device) pairs measured; "
              f"{len({r.model for r in rows})} models on {', '.join(sorted({r.device for r in rows}))}."]
    if missing:
        lines.append(f"Not in this table (the bench did not reach them): {', '.join(missing)}; "
                     "`python -m benchmarks.bench_zoo --models ... --from DIR` adds them.")
    lines.append("")
    return "\n".join(lines)


def write_section(readme: Path, text: str) -> None:
    """Replace (or append) the README's "## Model zoo" section."""
    old = readme.read_text()
    start = old.find(HEADING + "\n")
    if start < 0:
        readme.write_text(old.rstrip("\n") + "\n\n" + text)
        return
    end = old.find("\n## ", start + len(HEADING))
    readme.write_text(old[:start] + text + (old[end + 1:] if end >= 0 else ""))


def _export_cells(row: ZooRow) -> list[str]:
    phases = " · ".join(f"{SHORT.get(n, n)} {s:.1f}" for n, s in row.phases.seconds) if row.phases else "-"
    own = f"{row.phases.own_share:.0%}" if row.phases else "-"
    size = f"{row.pte_bytes / 1024:.0f} KiB" if row.pte_bytes else "-"
    return [_num(row.export_s, "{:.1f}"), phases, own, size]


def _speedup(row: ZooRow) -> str:
    if row.recipe == "fp32" and row.measured:
        return "(base)"
    if row.speedup is None:
        return "-"
    ci = f" [{row.speedup_ci[0]:.2f}, {row.speedup_ci[1]:.2f}]" if row.speedup_ci else ""
    return f"{row.speedup:.2f}x{ci}"


def _outside(row: ZooRow) -> str:
    if row.outside_share is None:
        return "-"
    return f"{row.outside_share:.0%}" + (f": {row.outside_ops}" if row.outside_ops and row.outside_ops != "none" else "")


def _why(row: ZooRow) -> str:
    # paths as in the checkout, whichever checkout (a worktree) measured the row
    reason = _CHECKOUT.sub("", row.reason).replace("|", "\\|")
    if row.measured:
        return reason
    return f"{'NOT EXPORTED' if row.export_s is None else 'not measured'}: {reason}"


def _num(value: float | None, form: str) -> str:
    return "-" if value is None else form.format(value)
