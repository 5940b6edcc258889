"""Throttling and interference flags from the runner's calibration workload.

The runner times a fixed workload (a 64x64 GEMM plus memory traffic, `--calibration_rounds`)
before and after its measured executions. On one device, the same work takes the same time
unless the clocks dropped (throttling) or something else shared the core (interference). So each
process run's slower calibration is compared with the job's reference on that device, the
fastest calibration any of its runs saw (normally the first run's: the issue asks for "the job's
first"; taking the fastest means a first run that was itself disturbed cannot hide the others);
a run more than `threshold` slower is flagged, with the figure:

- `throttled` when the device says why: a CPU clock below the reference run's, or Android's
  thermal status above it;
- `interfered` otherwise (same clocks, less CPU time for us).

One rule for everything that says it: the progress lines (`flag_news`, after each process run,
over the runs so far), the manifest and the summary (`flag_runs` over all of the device's runs)
apply `flag_runs` and word it with `flag_text`. The reference only gets faster as runs come in,
so a flag once given stays; when a faster calibration arrives, the news says so and gives the
flagged runs' new figures, so the last thing the progress said is what the summary says.

Method: a ratio against one reference, not a statistical test; the threshold (25 %) is far
above the calibration's own run-to-run spread on the testbed (under 5 %, docs/architecture.md,
"The testbed"), and a core shared with one busy loop roughly doubles it (test_busy_loop_on_the_pinned_core_is_flagged).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from device_agents.facts import DeviceFacts
from orchestrator.results.conditions import DeviceState
from orchestrator.results.model import ProcessRun, RunFlag

SLOWDOWN_THRESHOLD = 0.25
# A clock this much below the reference run's counts as throttling (governors wobble a little).
CLOCK_DROP = 0.05


def flag_runs(runs: Sequence[ProcessRun], threshold: float = SLOWDOWN_THRESHOLD) -> list[ProcessRun]:
    """The runs (in the order they ran on one device) with `slowdown` and `flag` filled in."""
    calibrated = [r for r in runs if r.calibration_ms]
    if not calibrated:
        return list(runs)
    reference = min(calibrated, key=_fastest)
    base = _fastest(reference)
    out = []
    for run in runs:
        figure = run.calibration_ms
        if figure is None or base <= 0:
            out.append(run)
            continue
        slowdown = figure / base - 1.0
        flag = None
        if slowdown > threshold:
            flag = RunFlag.THROTTLED if _throttled(reference.device_state, run.device_state) else RunFlag.INTERFERED
        out.append(replace(run, slowdown=slowdown, flag=flag))
    return out


def flag_text(run: ProcessRun) -> str:
    """`run-2 interfered (calibration +41%)`: how a flagged run is named, in progress lines and summaries alike."""
    figure = f" (calibration {run.slowdown:+.0%})" if run.slowdown is not None else ""
    return f"{run.label} {run.flag}{figure}"


def reference_label(runs: Sequence[ProcessRun]) -> str | None:
    """The run whose calibration the others are measured against (the fastest), or None."""
    calibrated = [r for r in runs if r.calibration_ms]
    return min(calibrated, key=_fastest).label if calibrated else None


def flag_news(before: Sequence[tuple[str, ProcessRun]], after: Sequence[tuple[str, ProcessRun]]) -> list[str]:
    """What changed when a process run was added (`after` = `before` + the new run; each with its model's
    name): runs newly flagged, and when the reference got faster, every flagged run's new figure."""
    old = {(m, r.label): r for m, r in zip((m for m, _ in before), flag_runs([r for _, r in before]), strict=True)}
    new = list(zip((m for m, _ in after), flag_runs([r for _, r in after]), strict=True))
    lines = [f"{model} {flag_text(run)}" for model, run in new
             if run.flag is not None and getattr(old.get((model, run.label)), "flag", None) is None]
    moved = reference_label([r for _, r in before]) not in (None, reference_label([r for _, r in after]))
    still = [f"{model} {flag_text(run)}" for model, run in new
             if run.flag is not None and getattr(old.get((model, run.label)), "flag", None) is not None]
    if moved and still:
        ref = reference_label([r for _, r in after])
        lines.append(f"faster calibration in {ref}: now " + ", ".join(still))
    return lines


def _fastest(run: ProcessRun) -> float:
    return min(v for v in (run.calibration_before_ms, run.calibration_after_ms) if v is not None)


def _throttled(reference: DeviceState, state: DeviceState) -> bool:
    ref_facts, facts = reference.facts or DeviceFacts(), state.facts or DeviceFacts()
    ref_clock, clock = _mean_clock(ref_facts), _mean_clock(facts)
    if ref_clock and clock and clock < ref_clock * (1.0 - CLOCK_DROP):
        return True
    ref_status = _number(ref_facts.android.thermal_status if ref_facts.android else None)
    status = _number(facts.android.thermal_status if facts.android else None)
    return status is not None and status > (ref_status or 0)


def _mean_clock(facts: DeviceFacts) -> float | None:
    clocks = [_number(cpu.cur_khz) for cpu in facts.cpus]
    known = [c for c in clocks if c]
    return sum(known) / len(known) if known else None


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
