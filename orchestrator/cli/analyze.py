"""`etfarm analyze`: per-op statistics of ETDumps, merged across files (runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.options import JsonOption


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze)


def analyze(
    etdumps: Annotated[list[Path], typer.Argument(help="ETDump files (.etdp); statistics merge all of them.")],
    etrecord: Annotated[Path | None, typer.Option(help="ETRecord of the model: adds op types and backends.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the per-event statistics as CSV here.")] = None,
    top: Annotated[int, typer.Option(help="Events to print, slowest first (0 = all).")] = 20,
    as_json: JsonOption = False,
) -> None:
    """Print per-op latency (samples, avg, p50, p90, CV) over ETDUMPS; --out writes stats CSV."""
    # numpy-only path on purpose: importing pandas would double this command's run time.
    from orchestrator.profiles import collect_samples, record_columns, summary_records
    from orchestrator.report import format_report, json_text, write_stats_csv

    samples = collect_samples(etdumps, etrecord)
    records = summary_records(samples)
    if out is not None:
        write_stats_csv(records, record_columns(samples), out)
    if as_json:
        columns = record_columns(samples)
        typer.echo(json_text({"etdumps": [str(p) for p in etdumps], "etrecord": str(etrecord) if etrecord else None,
                              "samples": int(samples.duration_ms.size), "csv": str(out) if out else None,
                              "events": [{c: r.get(c) for c in columns} for r in records]}))
        return
    typer.echo(f"{len(etdumps)} ETDump file(s), {samples.duration_ms.size} samples")
    typer.echo(format_report(records, top))
    if out is not None:
        typer.echo(f"wrote {out}")
