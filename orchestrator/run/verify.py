"""Output verification: the device's outputs against the eager reference (numpy only)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from orchestrator.artifacts.tensorfile import read_tensors
from orchestrator.results.model import Verification, VerificationStatus

# BundledProgram's tolerances (ExecuTorch's example_runner --output_verification).
RTOL = 1e-3
ATOL = 1e-5


def verify_outputs(reference: Path | None, outputs: Sequence[Path], rtol: float = RTOL, atol: float = ATOL) -> Verification:
    """Compare every run's outputs with the reference; one mismatch fails the verdict."""
    if reference is None or not reference.is_file():
        return Verification(VerificationStatus.SKIPPED, "no reference outputs for this model")
    if not outputs:
        return Verification(VerificationStatus.SKIPPED, "the runner wrote no outputs")
    expected = read_tensors(reference)
    worst = 0.0
    for path in outputs:
        actual = read_tensors(path)
        if len(actual) != len(expected):
            return Verification(
                VerificationStatus.FAIL,
                f"{path.parent.name}: {len(actual)} outputs, expected {len(expected)}",
                None,
                len(outputs),
            )
        for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
            if got.shape != want.shape:
                return Verification(
                    VerificationStatus.FAIL,
                    f"{path.parent.name}: output {index} has shape {got.shape}, expected {want.shape}",
                    None,
                    len(outputs),
                )
            diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.size else 0.0
            worst = max(worst, diff)
            if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
                return Verification(
                    VerificationStatus.FAIL,
                    f"{path.parent.name}: output {index} differs from the reference "
                    f"(max |diff| {diff:.3g}, rtol {rtol}, atol {atol})",
                    worst,
                    len(outputs),
                )
    return Verification(
        VerificationStatus.PASS, f"{len(outputs)} run(s) match the reference (max |diff| {worst:.3g})", worst, len(outputs)
    )
