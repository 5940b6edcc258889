from pathlib import Path

import numpy as np
import pytest

from orchestrator.artifacts.tensorfile import read_tensors, write_tensors
from orchestrator.base.errors import AnalysisError
from orchestrator.run.verify import verify_outputs


def test_roundtrip_keeps_dtype_shape_and_values(tmp_path: Path) -> None:
    arrays = [np.arange(24, dtype=np.float32).reshape(2, 3, 4), np.array([1, -2], dtype=np.int64),
              np.array(True), np.zeros((0, 3), dtype=np.float16)]
    write_tensors(tmp_path / "t.etft", arrays)
    back = read_tensors(tmp_path / "t.etft")
    assert len(back) == 4
    for got, want in zip(back, arrays, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("data", [b"", b"ETFX\x01\x00\x00\x00", b"ETFT\x01\x00\x00\x00\x01\x00\x00\x00\x06\x00\x00\x00\x01"])
def test_bad_files_raise_analysis_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bad.etft"
    path.write_bytes(data)
    with pytest.raises(AnalysisError, match="not a valid ETFT"):
        read_tensors(path)


def test_verify_pass_fail_and_skip(tmp_path: Path) -> None:
    ref = tmp_path / "ref.etft"
    write_tensors(ref, [np.ones((2, 2), np.float32)])
    runs = []
    for k, delta in enumerate([0.0, 1e-6]):
        run = tmp_path / f"run-{k}"
        run.mkdir()
        write_tensors(run / "outputs.etft", [np.ones((2, 2), np.float32) + delta])
        runs.append(run / "outputs.etft")
    verdict = verify_outputs(ref, runs)
    assert verdict.status == "pass" and verdict.runs_checked == 2
    assert verdict.max_abs_diff == pytest.approx(1e-6, rel=0.1)

    bad = tmp_path / "run-bad"
    bad.mkdir()
    write_tensors(bad / "outputs.etft", [np.full((2, 2), 1.1, np.float32)])
    failed = verify_outputs(ref, runs + [bad / "outputs.etft"])
    assert failed.status == "fail" and "run-bad" in failed.detail

    wrong_shape = tmp_path / "run-shape"
    wrong_shape.mkdir()
    write_tensors(wrong_shape / "outputs.etft", [np.ones((4,), np.float32)])
    assert "shape" in verify_outputs(ref, [wrong_shape / "outputs.etft"]).detail

    assert verify_outputs(None, runs).status == "skipped"
    assert verify_outputs(ref, []).status == "skipped"
