"""The accuracy a quantized program pays, per device (docs/how-to/quantized.md): its outputs against the fp32
eager model's on the same inputs.

For every model lowered with an export recipe, the finisher compares each traced run's outputs (the runner's
`outputs.etft`) with the eager model's (`eager_outputs.etft`, written at export), all outputs flattened
together: SNR in dB (10 log10 of signal power over error power), the largest absolute error, the cosine
similarity and, for outputs shaped like class scores (2-D, a row per sample, at least two columns), the share
of rows whose top-1 class agrees. The worst run is kept (a program's runs should agree; if they do not, the
worst is what a user can get). numpy only, imported when comparing: the results model holds `Accuracy`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Accuracy:
    """A program's outputs against the fp32 eager model's, on one device (the worst of its runs)."""

    snr_db: float | None  # None: no error at all (identical outputs), or no signal to measure against
    max_abs_error: float | None  # None: nothing compared
    cosine: float | None  # None: an all-zero side
    top1_agreement: float | None = None  # share of class-score rows whose argmax agrees; None: no such output
    top1_rows: int = 0  # rows the agreement is over
    runs: int = 0  # runs compared
    detail: str = ""  # why nothing could be compared ('' when compared)

    @property
    def exact(self) -> bool:
        return self.runs > 0 and self.max_abs_error == 0.0


def output_accuracy(eager: Path | None, outputs: Sequence[Path]) -> Accuracy | None:
    """The worst run's accuracy against the eager outputs; None without eager outputs (not a recipe export)."""
    if eager is None or not eager.is_file():
        return None
    from orchestrator.artifacts.tensorfile import read_tensors

    if not outputs:
        return Accuracy(None, None, None, detail="the runner wrote no outputs")
    expected = read_tensors(eager)
    found = []
    for path in outputs:
        got = read_tensors(path)
        if len(got) != len(expected) or any(g.shape != e.shape for g, e in zip(got, expected, strict=False)):
            return Accuracy(None, None, None, runs=len(outputs),
                            detail=f"{path.parent.name}: outputs not shaped as the eager model's")
        found.append(compare_outputs(expected, got))
    worst = min(found, key=lambda a: math.inf if a.snr_db is None else a.snr_db)
    return Accuracy(worst.snr_db, max(a.max_abs_error or 0.0 for a in found), worst.cosine, worst.top1_agreement,
                    worst.top1_rows, len(outputs))


def compare_outputs(expected: Sequence[np.ndarray], got: Sequence[np.ndarray]) -> Accuracy:
    """One run's outputs against the eager ones (same count and shapes)."""
    import numpy as np

    ref = np.concatenate([e.astype(np.float64).ravel() for e in expected]) if expected else np.zeros(0)
    out = np.concatenate([g.astype(np.float64).ravel() for g in got]) if got else np.zeros(0)
    error = out - ref
    max_abs = float(np.max(np.abs(error))) if error.size else 0.0
    agree, rows = _top1(expected, got)
    return Accuracy(snr_db(ref, out), max_abs, cosine(ref, out), agree, rows, 1)


def snr_db(reference: np.ndarray, actual: np.ndarray) -> float | None:
    """10 log10(sum(ref^2) / sum((actual - ref)^2)); None when there is no error or no signal."""
    import numpy as np

    noise = float(np.sum((actual - reference) ** 2))
    signal = float(np.sum(reference ** 2))
    if noise == 0.0 or signal == 0.0 or not math.isfinite(noise):
        return None
    return 10.0 * math.log10(signal / noise)


def cosine(reference: np.ndarray, actual: np.ndarray) -> float | None:
    import numpy as np

    norms = float(np.linalg.norm(reference)) * float(np.linalg.norm(actual))
    return float(np.dot(reference, actual)) / norms if norms > 0 else None


def _top1(expected: Sequence[np.ndarray], got: Sequence[np.ndarray]) -> tuple[float | None, int]:
    """Over every output shaped like class scores ([rows, classes], classes >= 2): the share of rows agreeing."""
    import numpy as np

    agree = rows = 0
    for e, g in zip(expected, got, strict=False):
        if e.ndim == 2 and e.shape[1] >= 2 and np.issubdtype(e.dtype, np.floating):
            agree += int(np.sum(np.argmax(e, axis=1) == np.argmax(g, axis=1)))
            rows += e.shape[0]
    return (agree / rows if rows else None), rows
