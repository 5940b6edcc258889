"""run/engine/belonging.py: the files beside a .pte given directly are of its program, or refused before anything runs.

Real exports (MLPs of 16 features; tests/helpers/etdumps.py) with ETFT files written here: the program's own
files pass; inputs and reference outputs of other shapes or dtypes, and an ETRecord of another program, are a
DataError naming the file and the program. An export etfarm made (not `given`) is not checked."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.artifacts.pte_info import check_program
from orchestrator.artifacts.tensorfile import write_tensors
from orchestrator.base.errors import DataError
from orchestrator.results.job_config import JobOptions
from orchestrator.run.engine.belonging import check_beside
from orchestrator.run.engine.sweep import sweep_models
from tests.helpers.etdumps import PORTABLE, XNNPACK, real_model

pytestmark = pytest.mark.slow  # exports (a few seconds each, once per process)


def given(tmp_path: Path, kind: str = PORTABLE, layers: int = 3, *, etrecord: Path | None = None,
          inputs: list[np.ndarray] | None = None, outputs: list[np.ndarray] | None = None) -> ExportedModel:
    model = real_model(kind, layers)
    files = {}
    for name, arrays in (("inputs.etft", inputs), ("reference_outputs.etft", outputs)):
        if arrays is not None:
            write_tensors(tmp_path / name, arrays)
            files[name] = tmp_path / name
    return ExportedModel("m", str(model.pte), "xnnpack", "k", model.pte, etrecord or model.etrecord,
                         files.get("inputs.etft"), files.get("reference_outputs.etft"), cached=True, given=True)


def check(model: ExportedModel) -> None:
    check_beside(model, check_program(model.pte))


def test_the_programs_own_files_pass(tmp_path: Path) -> None:
    check(given(tmp_path, inputs=[np.ones((2, 16), np.float32)], outputs=[np.zeros((2, 16), np.float32)]))
    check(given(tmp_path, XNNPACK, inputs=[np.ones((2, 16), np.float32)]))


@pytest.mark.parametrize(("files", "why"), [
    ({"inputs": [np.ones((4, 64), np.float32)]}, "inputs.etft does not hold the inputs of {pte}: input 0 is float32 "
                                                 "[4, 64]; forward takes float32 [2, 16]"),
    ({"inputs": [np.ones((2, 16), np.float64)]}, "input 0 is float64 [2, 16]; forward takes float32 [2, 16]"),
    ({"inputs": [np.ones((2, 16), np.float32)] * 2}, "2 input(s); forward takes 1"),
    ({"outputs": [np.ones((1, 10), np.float32)]}, "reference_outputs.etft does not hold the outputs of {pte}: output 0 "
                                                  "is float32 [1, 10]; forward gives float32 [2, 16]"),
])
def test_inputs_and_outputs_of_another_shape_are_refused(tmp_path: Path, files: dict, why: str) -> None:
    model = given(tmp_path, **files)
    with pytest.raises(DataError) as refused:
        check(model)
    assert why.format(pte=model.pte) in str(refused.value)
    assert str(refused.value).endswith("(files beside a .pte are taken as its own: move the other model's files away)")


def test_a_cut_inputs_file_is_refused_naming_it(tmp_path: Path) -> None:
    model = given(tmp_path, inputs=[np.ones((2, 16), np.float32)])
    assert model.inputs is not None
    model.inputs.write_bytes(model.inputs.read_bytes()[:-20])
    with pytest.raises(DataError, match=f"{model.inputs}: not a valid ETFT tensor file .truncated."):
        check(model)


def test_an_etrecord_of_another_program_is_refused(tmp_path: Path) -> None:
    model = given(tmp_path, PORTABLE, 5, etrecord=real_model(PORTABLE, 3).etrecord)
    with pytest.raises(DataError, match=f"{real_model(PORTABLE, 3).etrecord} does not belong to the program {model.pte}"):
        check(model)


def test_only_given_programs_are_checked_and_before_anything_else(tmp_path: Path) -> None:
    """sweep_models (the job's check of every program, before any device is contacted) checks a given .pte's
    files; an export etfarm made together is taken as it is."""
    foreign = given(tmp_path, inputs=[np.ones((4, 64), np.float32)])
    with pytest.raises(DataError, match="does not hold the inputs"):
        sweep_models([foreign], JobOptions())
    assert [m.name for m, _ in sweep_models([replace(foreign, given=False)], JobOptions())] == ["m"]
