"""`etfarm analyze`: per-op statistics of ETDumps, merged across files (runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from orchestrator.base.errors import AnalysisError
from orchestrator.cli.options import JsonOption


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze)


def analyze(
    etdumps: Annotated[list[Path], typer.Argument(help="ETDump files (.etdp); statistics merge all of them.")],
    etrecord: Annotated[Path | None, typer.Option(help="ETRecord of the model: adds op types and backends.")] = None,
    pte: Annotated[Path | None, typer.Option(
        help="The program (.pte) the ETDumps ran: names every XNNPACK kernel in your model. Default with --etrecord: "
             "<etrecord stem>.pte or model.pte beside the ETRecord, when there is one.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the per-event statistics as CSV here.")] = None,
    top: Annotated[int, typer.Option(help="Events to print, slowest first (0 = all).")] = 20,
    as_json: JsonOption = False,
) -> None:
    """Print per-op latency (samples, avg, p50, p90, CV) over ETDUMPS; --out writes stats CSV.

    An ETRecord (or .pte) that is not of the ETDumps' program is refused (exit 2)."""
    # numpy-only path on purpose: importing pandas would double this command's run time; loaded when the command
    # runs, as cli/__init__ imports every command module to register it
    from dataclasses import asdict

    from orchestrator.profiles import collect_samples, record_columns, summary_records
    from orchestrator.profiles.analysis_core import IDENTITY_COLUMNS
    from orchestrator.profiles.rollups import rollup
    from orchestrator.profiles.stat_rows import StatRow
    from orchestrator.report import format_report, json_text
    from orchestrator.report.terminal.rollups import format_rollup

    if pte is None and etrecord is not None:
        pte = default_pte(etrecord)
    samples = collect_samples(etdumps, etrecord, pte=pte, strict=True)
    records = summary_records(samples)
    rows = [StatRow.from_record("", "", r) for r in records]
    summed = rollup("", "", rows)
    if out is not None:
        _write_csv(out, rows, linked=samples.block_links is not None)
        _write_rollups(out.with_name(out.stem + ".rollups.csv"), summed)
    if as_json:
        columns = [*record_columns(samples), *IDENTITY_COLUMNS]  # each event's op identity too
        typer.echo(json_text({"etdumps": [str(p) for p in etdumps], "etrecord": str(etrecord) if etrecord else None,
                              "pte": str(pte) if pte else None, "kernel_error": samples.kernel_error,
                              "samples": int(samples.duration_ms.size), "csv": str(out) if out else None,
                              "events": [{c: r.get(c) for c in columns} for r in records],
                              "modules": [asdict(m) for m in summed.modules],
                              "op_types": [asdict(t) for t in summed.op_types]}))
        return
    typer.echo(f"{len(etdumps)} ETDump file(s), {samples.duration_ms.size} samples")
    if samples.kernel_error:
        typer.echo(f"XNNPACK kernels not named in your model: {samples.kernel_error} (--pte FILE)")
    typer.echo(format_report(records, top))
    if summed.op_types:
        typer.echo("\n" + format_rollup(summed))
    if out is not None:
        typer.echo(f"wrote {out} and {out.with_name(out.stem + '.rollups.csv')}")


def default_pte(etrecord: Path) -> Path | None:
    """The program beside an ETRecord: `<stem>.pte`, else `model.pte` (etfarm's export cache)."""
    for candidate in (etrecord.with_suffix(".pte"), etrecord.parent / "model.pte"):
        if candidate.is_file():
            return candidate
    return None


def _write_csv(out: Path, rows: list[Any], linked: bool) -> None:
    """stats.csv's columns without `device, model`, through the one stats.csv writer."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.profiles.stat_rows import write_stats_csv

    try:
        write_stats_csv(out, rows, with_ids=False, linked=linked)
    except OSError as exc:
        raise AnalysisError(f"{out}: cannot write CSV: {exc.strerror or exc}") from None


def _write_rollups(out: Path, summed: Any) -> None:
    """The roll-ups beside the statistics (`stats.rollups.csv` for `--out stats.csv`), in rollups.csv's columns."""
    from orchestrator.base.cache import write_text_atomic
    from orchestrator.profiles.rollups import rollups_csv

    try:
        write_text_atomic(out, rollups_csv([summed]))
    except OSError as exc:
        raise AnalysisError(f"{out}: cannot write CSV: {exc.strerror or exc}") from None
