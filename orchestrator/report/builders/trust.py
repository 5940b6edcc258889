"""Why to believe a report's numbers, or not: computed once here, shown on every page.

Per device and model of a job:
- the process runs the calibration workload flagged (`interfered`: something shared the core;
  `throttled`: the clocks dropped), each with its calibration delta, worded by
  run/calibration.py's `flag_text` exactly as the progress lines and the summary word it. They
  stay in the statistics (the numbers are what was measured); the flag says how far to trust them;
- the executions left out of the statistics because they waited for a CPU (results/contention.py), with how
  contended the device was;
- runs that are NOT in the statistics, and why: a try cut off and repeated (the device's
  `attempts`), the planned runs a partial model is missing, the untraced runs (only in the
  untraced p50 and the tracer's overhead), the cold first run (load times apart);
- the tracer's overhead with its interval, from enough untraced runs, or marked unreliable;
- an unstable result, with the reasons orchestrator/base/stats.py gives.
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.report.builders.ratios import MIN_RUNS_FOR_INTERVAL, ratio_with_ci
from orchestrator.report.model import Interval, TracerOverhead, TrustNote
from orchestrator.results.contention import contention_text
from orchestrator.results.model import Attempt, DeviceResult, Job, ModelResult
from orchestrator.run.calibration import flag_text

# `etfarm devices emulate`: the device is qemu on a host; its figures say how etfarm works, not how fast the hardware is
EMULATED_NOTE = ("an emulated device (qemu on a host, `etfarm devices emulate`): its timings are emulation, not the "
                 "hardware's; compare it with nothing but itself")
WORRYING = ("interfered", "throttled", "unstable", "partial")  # the notes a "nothing flagged" summary must not contradict


def trust_summary(notes: Iterable[TrustNote], what: str = "process run") -> str | None:
    """The line over a list of trust notes when none of them is worrying, generated from the same notes the list
    shows (so it never says "nothing was flagged" above a flagged run); None when some note is."""
    if any(n.kind in WORRYING for n in notes):
        return None
    return f"No {what} was flagged interfered or throttled, and no result is unstable."


def tracer_overhead(model: ModelResult) -> TracerOverhead | None:
    """traced p50 / untraced p50 - 1 over process runs, with its interval, or why it is unreliable."""
    traced = [r.execute_ms for r in model.traced_runs if r.execute_ms]
    untraced = [r.execute_ms for r in model.untraced_runs if r.execute_ms]
    if not traced or not untraced:
        return None
    ratio, interval = ratio_with_ci(traced, untraced)
    if ratio is None:
        return None
    shifted = Interval(interval.low - 1.0, interval.high - 1.0, interval.level) if interval else None
    if shifted is not None:
        return TracerOverhead(ratio - 1.0, shifted, len(untraced), True, "", shifted.low <= 0.0 <= shifted.high)
    note = (f"from {len(untraced)} untraced run{'s' if len(untraced) != 1 else ''}: unreliable (an interval needs "
            f"{MIN_RUNS_FOR_INTERVAL} runs a side; use --untraced-runs {MIN_RUNS_FOR_INTERVAL})")
    spread = model.stability.between
    noise = ratio - 1.0 <= 0.0 or (spread is not None and abs(ratio - 1.0) <= spread)
    return TracerOverhead(ratio - 1.0, None, len(untraced), False, note, noise)


def trust_notes(job: Job, models: list[str]) -> tuple[TrustNote, ...]:
    """Every note of the job, device by device, model by model."""
    out: list[TrustNote] = []
    planned = job.config.options.runs
    for device in job.devices:
        if device.emulated:
            out.append(TrustNote(device.name, "", "emulated", EMULATED_NOTE))
        for name in models:
            model = device.model(name)
            if model is not None:
                out += _model_notes(device, model, planned)
        out += [TrustNote(device.name, "", "excluded", _attempt_text(a)) for a in device.attempts]
    return tuple(out)


def _attempt_text(attempt: Attempt) -> str:
    """What became of a failed try: said to be tried again only when another try followed."""
    if attempt.retried is None:  # a manifest written before etfarm recorded it
        return f"{attempt.step}: failed ({attempt.error}); the failed try is not in the statistics"
    if attempt.retried:
        return f"{attempt.step}: failed ({attempt.error}) and was tried again; the failed try is not in the statistics"
    return f"{attempt.step}: failed ({attempt.error}) and was not tried again"


def _model_notes(device: DeviceResult, model: ModelResult, planned: int) -> list[TrustNote]:
    notes = []
    for kind in ("throttled", "interfered"):
        runs = [flag_text(r) for r in model.flagged_runs if r.flag == kind]
        if runs:
            notes.append(TrustNote(device.name, model.name, kind, ", ".join(runs) + ": kept in the statistics"))
    contended = contention_text(model.contention_summary)
    if contended and model.contention_summary.contended:
        notes.append(TrustNote(device.name, model.name, "contended",
                               contended + ": those executions are not in the statistics"))
    missing = planned - len(model.traced_runs)
    if missing > 0 and model.traced_runs:
        notes.append(TrustNote(device.name, model.name, "partial",
                               f"{missing} of {planned} planned process runs are missing"
                               + (f" ({model.error})" if model.error else "")))
    untraced = [r.label for r in model.untraced_runs]
    if untraced:
        notes.append(TrustNote(device.name, model.name, "excluded",
                               f"{', '.join(untraced)} (no event tracer): only in the untraced p50 and the tracer's "
                               "overhead, not in the traced statistics"))
    cold = next((r.label for r in model.runs if r.cold), None)
    if cold is not None:
        notes.append(TrustNote(device.name, model.name, "excluded",
                               f"{cold} loaded the model cold (first run after staging): its load time is shown apart"))
    tracer = tracer_overhead(model)
    if tracer is not None and tracer.overhead is not None:
        figure = f"{tracer.overhead:+.1%}"
        if tracer.interval is not None:
            figure += f" [{tracer.interval.low:+.1%}, {tracer.interval.high:+.1%}]"
        cost = (f"the ETDump tracer's cost on the p50 is within the noise (measured {figure}) "
                if tracer.within_noise else f"the ETDump tracer costs {figure} on the p50 ")
        notes.append(TrustNote(device.name, model.name, "tracer",
                               cost + (tracer.note or f"({tracer.untraced_runs} untraced runs)")))
    notes += [TrustNote(device.name, model.name, "unstable", reason) for reason in model.stability.reasons]
    return notes
