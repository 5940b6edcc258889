"""`etfarm analyze`: per-op statistics of ETDumps, merged across files (runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze)


def analyze(
    etdumps: Annotated[list[Path], typer.Argument(help="ETDump files (.etdp); statistics merge all of them.")],
    etrecord: Annotated[Path | None, typer.Option(help="ETRecord of the model: adds op types and backends.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the per-event statistics as CSV here.")] = None,
    top: Annotated[int, typer.Option(help="Events to print, slowest first (0 = all).")] = 20,
) -> None:
    """Print per-op latency (samples, avg, p50, p90, CV) over ETDUMPS; --out writes stats CSV."""
    # numpy-only path on purpose: importing pandas would double this command's run time.
    from orchestrator.profiles.analysis_core import (
        collect_samples,
        record_columns,
        summary_records,
    )
    from orchestrator.report.tables import format_report, write_stats_csv

    samples = collect_samples(etdumps, etrecord)
    records = summary_records(samples)
    typer.echo(f"{len(etdumps)} ETDump file(s), {samples.duration_ms.size} samples")
    typer.echo(format_report(records, top))
    if out is not None:
        write_stats_csv(records, record_columns(samples), out)
        typer.echo(f"wrote {out}")
