"""What lies beside a .pte given directly is of its program, checked before anything runs.

`--model dir/model.pte` takes the ETRecord, inputs and reference outputs found beside it as the
program's own (artifacts/lowering.py `_existing_pte`). Files of another model there made a job that
ran and then lied: ops labelled with the other model's layers, a device blamed for inputs it could
not take, outputs marked wrong for a shape the reference could never have. So, torch-free, before
any device is contacted (run/engine/sweep.py calls `check_beside` for every given program):

- inputs and reference outputs: their count, dtypes and shapes against `forward`'s signature as the
  .pte declares it (artifacts/pte_info.py; a dynamic size may be smaller than its bound);
- the ETRecord: its edge program's user inputs and outputs against the same signature, and the
  program check of profiles/belongs.py (the ETRecord's instructions, ops and delegate debug handles
  against the .pte's).

A mismatch is a DataError (exit 2): one line naming the file, the program and the first difference.
An export etfarm made is not checked: its files were written together.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.artifacts.pte_info import RUNNER_METHOD, PteInfo, PteMethod, signature_problem
from orchestrator.artifacts.tensorfile import read_tensors
from orchestrator.base.errors import AnalysisError, DataError
from orchestrator.profiles.belongs import check_program_belongs
from orchestrator.profiles.etrecord import load_etrecord

HINT = "files beside a .pte are taken as its own: move the other model's files away"


def check_beside(model: ExportedModel, info: PteInfo) -> None:
    """DataError naming the file when the inputs, reference outputs or ETRecord beside `model.pte` are not of it."""
    method = info.method(RUNNER_METHOD)
    if method is None or info.llm is not None:  # check_program refused the first; an LLM is fed by generation
        return
    if model.inputs is not None:
        _tensors_fit(model.inputs, method, "input", model.pte)
    if model.reference_outputs is not None:
        _tensors_fit(model.reference_outputs, method, "output", model.pte)
    if model.etrecord is not None:
        _etrecord_fits(model.etrecord, method, model.pte)


def _tensors_fit(path: Path, method: PteMethod, what: str, pte: Path) -> None:
    try:
        tensors = [(t.dtype.name, tuple(t.shape)) for t in read_tensors(path)]  # a cut file is refused here
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
    problem = signature_problem(tensors, method, what)
    if problem is not None:
        raise DataError(f"{path} does not hold the {what}s of {pte}: {problem} ({HINT})")


def _etrecord_fits(path: Path, method: PteMethod, pte: Path) -> None:
    record = load_etrecord(path)
    for what, declared in (("input", record.inputs), ("output", record.outputs)):
        problem = None if declared is None else signature_problem([(m.dtype, m.sizes) for m in declared], method, what)
        if problem is not None:
            raise DataError(f"{path} is not the ETRecord of {pte}: its {problem} ({HINT})")
    try:
        check_program_belongs(record, pte)
    except AnalysisError as exc:
        raise DataError(f"{exc} ({HINT})") from None
