"""`etfarm trace`: a Chrome/Perfetto trace (JSON) of one ETDump."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("trace")(trace)


def trace(
    etdump: Annotated[Path, typer.Argument(help="ETDump file (.etdp) of one run.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Trace JSON to write.")],
    run_block: Annotated[int | None, typer.Option(help="Only this run_data block (0-based, file order).")] = None,
    etrecord: Annotated[Path | None, typer.Option(help="ETRecord: adds op types to each slice.")] = None,
) -> None:
    """Write ETDUMP as a trace for ui.perfetto.dev or chrome://tracing."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.profiles.trace import write_trace

    count = write_trace(etdump, out, run_block, etrecord)
    typer.echo(f"wrote {out} ({count} slices)")
