"""`etfarm compare [A] [B]`: regression verdicts of run B against run A (or B's last good run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)


def compare(
    a: Annotated[
        str | None,
        typer.Argument(help="Baseline (A): a run directory or stored run id. Given alone, it is B, compared with --baseline."),
    ] = None,
    b: Annotated[
        str | None, typer.Argument(help="Candidate (B): a run directory or stored run id. Default: the newest stored run.")
    ] = None,
    baseline: Annotated[
        str,
        typer.Option(
            help="When A is not given: 'last-good' (per device and model, the newest earlier stored run of the same "
            "model name, device and settings that was not marked regressed) or a run id."
        ),
    ] = "last-good",
    threshold: Annotated[float, typer.Option(min=0, help="Practical size of an end-to-end regression, in percent.")] = 5.0,
    op_threshold: Annotated[float, typer.Option(min=0, help="Practical size of a per-op regression, in percent.")] = 10.0,
    noise_floor: Annotated[
        str,
        typer.Option(
            metavar="auto|PCT",
            help="The device's job-to-job noise: a regression (end to end and per op) must exceed it. A percentage, "
            "or 'auto': "
            "per device and model, the 95 % bound of the ratio between consecutive good stored runs of the same "
            "settings (needs the store and at least 6 such runs; the table's 'noise floor' column says which).",
        ),
    ] = "0",
    center: Annotated[
        str,
        typer.Option(
            help="A side's statistic over its per-run medians: 'mean', or 'fast' (their minimum: the uncontended "
            "speed; more power on devices whose processes land in slower states)."
        ),
    ] = "mean",
    no_ops: Annotated[bool, typer.Option("--no-ops", help="End-to-end verdicts only (skip reading ETDumps).")] = False,
    store: Annotated[
        Path | None, typer.Option("--store", help="Results store (default $ETFARM_STORE, else $XDG_DATA_HOME/etfarm/results.db).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdicts as JSON.")] = False,
) -> None:
    """Per device and model, end to end and per op: regressed, improved, unchanged or inconclusive.

    Ratio B/A of run-averaged medians (mean of per-run medians) with a hierarchical-bootstrap
    confidence interval over process runs and a Mann-Whitney U p-value on per-run medians
    (Benjamini-Hochberg across ops). Regressed only when significant AND the interval lies above
    the threshold, raised to the noise floor when one is given (--noise-floor auto: per device
    and model, from the stored history of good runs of the same settings). A device or model
    without data is `no-data`, never a regression; one without a baseline is `new`.
    Exit 0 no regression, 1 a regression (or wrong outputs in B), 2 usage error.
    """
    from orchestrator.report.verdicts import verdict_table
    from orchestrator.verdicts.compare import compare_against, compare_jobs
    from orchestrator.verdicts.statistics import VerdictSettings

    if center not in ("mean", "fast"):
        raise UsageError(f"--center: {center!r}; choose mean or fast")
    auto, floor = parse_noise_floor(noise_floor)
    settings = VerdictSettings(
        threshold=threshold / 100.0, op_threshold=op_threshold / 100.0, noise_floor=floor, center=center,
        auto_noise_floor=auto,
    )
    if a is not None and b is not None and not auto:
        comparison = compare_jobs(_resolve(a, store, "A"), _resolve(b, store, "B"), settings, per_op=not no_ops)
    else:
        from orchestrator.run.results import load_manifest
        from orchestrator.store import open_store, store_path
        from orchestrator.verdicts.baseline import (
            LAST_GOOD,
            history_noise_finder,
            last_good_finder,
            named_finder,
        )

        if not store_path(store).is_file():
            need = "--noise-floor auto needs" if auto else "compare needs A and B run directories, or"
            raise UsageError(f"{need} a results store (none at {store_path(store)})")
        with open_store(store) as opened:
            if a is not None and b is not None:
                a_dir, b_dir = _resolve(a, store, "A"), _resolve(b, store, "B")
                finder, label = named_finder(opened, str(a_dir)), load_manifest(a_dir).run_id
            else:
                b_dir = _resolve(a, store, "B") if a is not None else _newest(opened)
                label = baseline
            job_b = load_manifest(b_dir)
            if a is None or b is None:
                finder = last_good_finder(opened, job_b) if baseline == LAST_GOOD else named_finder(opened, baseline)
            noise = history_noise_finder(opened, job_b, center) if auto else None
            comparison = compare_against(b_dir, finder, settings, per_op=not no_ops, a_label=label, noise=noise)
    typer.echo(json.dumps(comparison.to_dict(), indent=2) if as_json else verdict_table(comparison))
    raise typer.Exit(comparison.exit_code)


def parse_noise_floor(value: str, option: str = "--noise-floor") -> tuple[bool, float]:
    """'auto' -> (True, 0.0); '3' or '3%' -> (False, 0.03). Anything else is a usage error."""
    text = str(value).strip().lower()
    if text == "auto":
        return True, 0.0
    try:
        number = float(text.removesuffix("%"))
    except ValueError:
        raise UsageError(f"{option}: {value!r}; expected 'auto' or a percentage such as 3") from None
    if not 0 <= number < 100:
        raise UsageError(f"{option}: {value!r}; expected 'auto' or a percentage from 0 to below 100")
    return False, number / 100.0


def _resolve(ref: str, store: Path | None, which: str) -> Path:
    from orchestrator.store import resolve_run

    try:
        return resolve_run(ref, store)
    except UsageError as exc:
        raise UsageError(f"{which}: {exc}") from None


def _newest(opened: object) -> Path:
    runs = opened.runs(limit=1)  # type: ignore[attr-defined]
    if not runs:
        raise UsageError(f"the store {opened.path} holds no runs; give run directories")  # type: ignore[attr-defined]
    if runs[0].run_dir is None:
        raise UsageError(f"newest stored run {runs[0].run_id}: its run directory is gone")
    return runs[0].run_dir
