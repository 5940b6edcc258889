"""`etfarm compare A B`: regression verdicts of run B against run A."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)


def compare(
    a: Annotated[Path, typer.Argument(help="Baseline run directory (A).")],
    b: Annotated[Path, typer.Argument(help="Candidate run directory (B), compared against A.")],
    threshold: Annotated[float, typer.Option(min=0, help="Practical size of an end-to-end regression, in percent.")] = 5.0,
    op_threshold: Annotated[float, typer.Option(min=0, help="Practical size of a per-op regression, in percent.")] = 10.0,
    noise_floor: Annotated[float, typer.Option(min=0, help="The device's run-to-run noise in percent; widens both thresholds to at least this.")] = 0.0,
    no_ops: Annotated[bool, typer.Option("--no-ops", help="End-to-end verdicts only (skip reading ETDumps).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdicts as JSON.")] = False,
) -> None:
    """Per device and model, end to end and per op: regressed, improved, unchanged or inconclusive.

    Ratio B/A of run-averaged medians (mean of per-run medians) with a hierarchical-bootstrap confidence interval over process runs and a
    Mann-Whitney U p-value on per-run medians (Benjamini-Hochberg across ops). Regressed only when
    significant AND the interval lies above the threshold. A device or model without data is
    `no-data`, never a regression. Exit 0 no regression, 1 a regression (or wrong outputs in B),
    2 usage error.
    """
    from orchestrator.report.verdicts import verdict_table
    from orchestrator.verdicts.compare import compare_jobs
    from orchestrator.verdicts.statistics import VerdictSettings

    for name, path in (("A", a), ("B", b)):
        if not path.exists():
            raise UsageError(f"{name}: {path} does not exist (give a run directory)")
    settings = VerdictSettings(threshold=threshold / 100.0, op_threshold=op_threshold / 100.0,
                               noise_floor=noise_floor / 100.0)
    comparison = compare_jobs(a, b, settings, per_op=not no_ops)
    typer.echo(json.dumps(comparison.to_dict(), indent=2) if as_json else verdict_table(comparison))
    raise typer.Exit(comparison.exit_code)
