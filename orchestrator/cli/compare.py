"""`etfarm compare [A] [B]`: regression verdicts of run B against run A (or B's last good run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.base.codec import encode
from orchestrator.base.errors import UsageError
from orchestrator.cli.options import JunitOption, StoreOption
from orchestrator.report.destination import check_target
from orchestrator.verdicts.statistics import CENTER_HELP, DEFAULT_CENTER, check_center


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)


ARef = Annotated[str | None, typer.Argument(
    help="Baseline (A): a run directory or stored run id. Given alone, it is B, compared with --baseline.")]
BRef = Annotated[str | None, typer.Argument(
    help="Candidate (B): a run directory or stored run id. Default: the newest stored run.")]
BaselineOption = Annotated[str, typer.Option(
    help="When A is not given: 'last-good' (per device and model, the newest earlier stored run of the same "
    "model name, device and settings that was not marked regressed, preferring one whose night judged the pair "
    "over newer inconclusive ones) or a run id.")]
CompareThresholdOption = Annotated[float, typer.Option(
    min=0, help="Practical size of an end-to-end regression, in percent.")]
CompareOpThresholdOption = Annotated[float, typer.Option(min=0, help="Practical size of a per-op regression, in percent.")]
NoiseFloorOption = Annotated[str, typer.Option(
    metavar="auto|PCT",
    help="The device's job-to-job noise: a regression (end to end and per op) must exceed it. A percentage, "
    "or 'auto': "
    "per device and model, the 95 % bound of the ratio between consecutive good stored runs of the same "
    "settings (needs the store and at least 6 such runs; the table's 'noise floor' column says which).")]
NoOpsOption = Annotated[bool, typer.Option("--no-ops", help="End-to-end verdicts only (skip reading ETDumps).")]
HtmlOption = Annotated[Path | None, typer.Option(
    "--html", help="Also write the A/B page (verdicts, per-op verdicts naming your layers, what changed in the "
                   "model, what to trust, B's report) to this file: the page `etfarm report B --against A` writes.")]


def compare(
    a: ARef = None,
    b: BRef = None,
    baseline: BaselineOption = "last-good",
    threshold: CompareThresholdOption = 5.0,
    op_threshold: CompareOpThresholdOption = 10.0,
    noise_floor: NoiseFloorOption = "0",
    center: Annotated[str, typer.Option(help=CENTER_HELP)] = DEFAULT_CENTER,
    no_ops: NoOpsOption = False,
    store: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdicts as JSON.")] = False,
    html: HtmlOption = None,
    junit: JunitOption = None,
) -> None:
    """Per device and model, end to end and per op: regressed, improved, unchanged or inconclusive.

    Ratio B/A of run-averaged medians (mean of per-run medians) with a hierarchical-bootstrap
    confidence interval over process runs and a Mann-Whitney U p-value on per-run medians
    (Benjamini-Hochberg across ops). Regressed only when significant AND the interval lies above
    the threshold, raised to the noise floor when one is given (--noise-floor auto: per device
    and model, from the stored history of good runs of the same settings). A device or model
    without data is `no-data`, never a regression; one without a baseline is `new`; sides that ran
    with different settings (backend, iterations, warmup, threads) are `settings-differ`, never a
    regression, and an interrupted or partial side is named `incomplete` (table, legend, JSON).
    Every verdict says the smallest change its samples could detect; a pair too noisy to see the threshold, or whose
    sides ran under measurably different contention, is `inconclusive` with the reason and the `etfarm run --ab`
    command that would settle it (docs/guide/trust.md). Between separate jobs, a change that a whole job landing
    in another speed state could make is `inconclusive` too, when the store's jobs of the model on that device (or
    either side's runs) have shown such states (the JSON's `speed_states`).
    Exit 0 no regression, 1 a regression (or wrong outputs in B), 2 usage error, 3 nothing regressed but some pair
    could not be judged.
    """
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.app.baseline import compare_refs
    from orchestrator.report.comparison_output import write_ab_page, write_junit
    from orchestrator.report.terminal.verdicts import verdict_table
    from orchestrator.verdicts.statistics import VerdictSettings
    from orchestrator.verdicts.trust import JOB_SHIFT_SD

    check_center(center)
    if html is not None:
        check_target(html, "--html")  # before the comparison: a page that cannot be written is said at once
    if junit is not None:
        check_target(junit, "--junit")
    auto, floor = parse_noise_floor(noise_floor)
    settings = VerdictSettings(
        threshold=threshold / 100.0, op_threshold=op_threshold / 100.0, noise_floor=floor, center=center,
        auto_noise_floor=auto, job_shift=JOB_SHIFT_SD,  # A and B are separate jobs (docs/guide/trust.md)
    )
    comparison = compare_refs(a, b, settings, baseline=baseline, store=store, per_op=not no_ops)
    typer.echo(json.dumps(encode(comparison), indent=2) if as_json else verdict_table(comparison))
    if junit is not None:
        write_junit(comparison, junit)
    if html is not None:
        written = write_ab_page(comparison, html, store, option="--html")
        if not as_json:
            typer.echo(f"report: {written}")
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

