"""An accuracy drop is a verdict of its own (docs/how-to/quantized.md, docs/explanation/verdicts.md).

A quantized configuration's accuracy (results/accuracy.py: its outputs against the fp32 eager model's on the
reference inputs) is deterministic for a given program and device: no sampling, no interval. B's accuracy is
judged against A's for the same (device, model, configuration): B `accuracy-dropped` when its SNR fell by more
than `SNR_DROP_DB` or its top-1 agreement by more than `TOP1_DROP`. A drop fails `compare` and a night (exit 1)
as a latency regression does; a night does not run it again to confirm (the same program gives the same
outputs). Between sides of different settings (another recipe, likeness.py) nothing is judged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from orchestrator.results.accuracy import Accuracy

SNR_DROP_DB = 3.0  # half the signal-to-noise power ratio: far beyond a program's run-to-run difference (none)
TOP1_DROP = 0.01  # one class-score row in a hundred now picks another class


@dataclass(frozen=True)
class AccuracyVerdict:
    """B's accuracy against A's for one (device, model)."""

    snr_a_db: float | None  # None: A's outputs equal the eager model's (infinite SNR)
    snr_b_db: float | None
    top1_a: float | None
    top1_b: float | None
    dropped: bool
    reason: str  # in words: what dropped, or that it held


def accuracy_verdict(a: Accuracy | None, b: Accuracy | None) -> AccuracyVerdict | None:
    """None when either side has no accuracy (not a recipe export, or nothing compared)."""
    if a is None or b is None or a.max_abs_error is None or b.max_abs_error is None:
        return None
    snr_a = math.inf if a.snr_db is None else a.snr_db
    snr_b = math.inf if b.snr_db is None else b.snr_db
    snr_drop = 0.0 if snr_a == snr_b else snr_a - snr_b  # inf - inf is no drop
    top1_drop = (a.top1_agreement - b.top1_agreement
                 if a.top1_agreement is not None and b.top1_agreement is not None else 0.0)
    why = []
    if snr_drop > SNR_DROP_DB:
        why.append(f"SNR {_db(a.snr_db)} -> {_db(b.snr_db)} (down {_db(snr_drop)}, beyond {SNR_DROP_DB:g} dB)")
    if top1_drop > TOP1_DROP:
        why.append(f"top-1 agreement {a.top1_agreement:.0%} -> {b.top1_agreement:.0%}")
    held = f"SNR {_db(a.snr_db)} -> {_db(b.snr_db)}"
    return AccuracyVerdict(a.snr_db, b.snr_db, a.top1_agreement, b.top1_agreement, bool(why),
                           "; ".join(why) if why else f"accuracy held ({held})")


def _db(value: float | None) -> str:
    return "exact" if value is None or math.isinf(value) else f"{value:.1f} dB"
