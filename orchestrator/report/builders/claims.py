"""Which device is fastest, claimed only when the statistics support it.

The leader is the device with the lowest p50 (builders/ratios.py: the report's one statistic). It
is called fastest only when, against EVERY other device, the interval of other p50 / leader p50
(process runs resampled) lies wholly above 1 + CLAIM_MARGIN: faster beyond the end-to-end
verdict threshold, not by a hair the next job could reverse. Otherwise the page says "no clear
difference" and gives the figures; with one device, or too few runs for an interval, it says
why no claim is made. Two identical devices are therefore never one "fastest".
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.report.builders.ratios import MIN_RUNS_FOR_INTERVAL, ratio_with_ci
from orchestrator.report.model import SpeedClaim, Versus
from orchestrator.verdicts.statistics import DEFAULT_THRESHOLD

CLAIM_MARGIN = DEFAULT_THRESHOLD  # 5 %, as `regressed` / `improved` need

Candidate = tuple[str, float, Sequence[Sequence[float]]]  # (device, p50 ms, its traced runs' executions)


def speed_claim(candidates: Sequence[Candidate]) -> SpeedClaim:
    """The claim for one model over the devices that measured it (failed devices left out by the caller)."""
    measured = [c for c in candidates if c[1] is not None and c[1] > 0]
    if not measured:
        return SpeedClaim(None, None, None, reason="no device produced a result")
    leader, leader_p50, leader_runs = min(measured, key=lambda c: c[1])
    if len(measured) == 1:
        return SpeedClaim(None, leader, leader_p50, reason="measured on one device only")
    versus = []
    for device, _, runs in measured:
        if device == leader:
            continue
        speedup, interval = ratio_with_ci(runs, leader_runs)
        clear = interval is not None and interval.low > 1.0 + CLAIM_MARGIN
        versus.append(Versus(device, speedup if speedup is not None else float("nan"), interval, clear))
    if all(v.clear for v in versus):
        return SpeedClaim(leader, leader, leader_p50, tuple(versus))
    short = [d for d, _, runs in measured if len(runs) < MIN_RUNS_FOR_INTERVAL]
    if short:
        reason = (f"fewer than {MIN_RUNS_FOR_INTERVAL} process runs on {', '.join(short)}: no interval, so no "
                  "device is called fastest")
    else:
        reason = (f"no clear difference: an interval does not put {leader} more than {CLAIM_MARGIN:.0%} ahead of "
                  "every other device")
    return SpeedClaim(None, leader, leader_p50, tuple(versus), reason)
