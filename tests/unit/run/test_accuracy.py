"""A recipe's accuracy against the fp32 eager model: SNR, max abs error, cosine and top-1 agreement, worst run."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from orchestrator.artifacts.tensorfile import write_tensors
from orchestrator.results.accuracy import compare_outputs, output_accuracy, snr_db


def test_snr_is_signal_power_over_error_power_in_db() -> None:
    ref = np.array([3.0, 4.0])  # power 25
    assert math.isclose(snr_db(ref, ref + np.array([0.5, 0.0])), 10 * math.log10(25 / 0.25))
    assert snr_db(ref, ref) is None  # no error at all: not a number of dB
    assert snr_db(np.zeros(2), np.ones(2)) is None  # no signal to measure against


def test_class_scores_count_top1_agreement_per_row_other_outputs_do_not() -> None:
    eager = [np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.4]], np.float32), np.ones((2, 3, 4), np.float32)]
    got = [np.array([[0.2, 0.7], [0.1, 0.3], [0.3, 0.5]], np.float32), np.ones((2, 3, 4), np.float32)]
    found = compare_outputs(eager, got)
    assert found.top1_rows == 3 and math.isclose(found.top1_agreement or 0, 2 / 3)
    assert math.isclose(found.max_abs_error, 0.7, rel_tol=1e-6)
    assert compare_outputs([np.ones((4, 4, 4), np.float32)], [np.ones((4, 4, 4), np.float32)]).top1_agreement is None


def test_the_worst_run_is_kept_and_a_misshapen_output_is_said(tmp_path: Path) -> None:
    eager = tmp_path / "eager.etft"
    write_tensors(eager, [np.array([[1.0, 2.0, 3.0]], np.float32)])
    runs = []
    for k, noise in enumerate((0.01, 0.1)):
        (tmp_path / f"run-{k}").mkdir()
        runs.append(tmp_path / f"run-{k}" / "outputs.etft")
        write_tensors(runs[-1], [np.array([[1.0 + noise, 2.0, 3.0]], np.float32)])
    found = output_accuracy(eager, runs)
    assert found is not None and found.runs == 2
    assert math.isclose(found.snr_db or 0, 10 * math.log10(14 / 0.1 ** 2), rel_tol=1e-5)  # run-1's, the worse
    assert math.isclose(found.max_abs_error or 0, 0.1, rel_tol=1e-5)
    write_tensors(runs[1], [np.ones((1, 4), np.float32)])
    bad = output_accuracy(eager, runs)
    assert bad is not None and bad.max_abs_error is None and "run-1: outputs not shaped" in bad.detail
    assert output_accuracy(None, runs) is None  # not a recipe export: no accuracy
