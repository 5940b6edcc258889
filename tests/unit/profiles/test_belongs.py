"""An ETRecord that does not belong to the ETDump's program is refused (issue 21 item 3), torch-free.

Synthetic ETDumps and ETRecords for each rule (an instruction the ETRecord lacks; portable kernels whose
ops are not the instruction's; a delegate call where the ETRecord has none), then real exports: the
ETDump of a 5-layer portable MLP read with a 3-layer one's ETRecord, and an XNNPACK ETDump with a
portable ETRecord. The files' own ETRecord is accepted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.analysis_core import collect_samples
from tests.helpers.etdumps import PORTABLE, XNNPACK, build_etdump, real_etdump, real_model, typical_runs
from tests.unit.profiles.test_etrecord import EDGE, node, write_etrecord


def _dump(path: Path, layers: int = 3) -> Path:
    path.write_bytes(build_etdump(typical_runs(iterations=2, layers=layers)))
    return path


def _record(path: Path, ops: list[str], delegate: dict | None = None) -> Path:
    nodes = [node(f"n{i}", EDGE + f"aten.{op}.default", i + 1) for i, op in enumerate(ops)]
    return write_etrecord(path, nodes, {str(i): i + 1 for i in range(len(ops))}, delegate)


def test_the_programs_own_etrecord_is_accepted(tmp_path: Path) -> None:
    samples = collect_samples([_dump(tmp_path / "a.etdp")], _record(tmp_path / "r", ["op0", "op1", "op2"]), strict=True)
    assert samples.block_links is not None


def test_an_instruction_the_etrecord_lacks_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AnalysisError, match="ran instruction 3, which the ETRecord does not have"):
        collect_samples([_dump(tmp_path / "a.etdp", layers=5)], _record(tmp_path / "r", ["op0", "op1", "op2"]),
                        strict=True)


def test_kernels_that_ran_other_ops_are_refused(tmp_path: Path) -> None:
    record = _record(tmp_path / "r", ["addmm", "relu", "addmm"])
    with pytest.raises(AnalysisError, match=r"does not belong .*3 of 3 ops differ \(first: instruction 0 ran 'op0'"):
        collect_samples([_dump(tmp_path / "a.etdp")], record, strict=True)
    one_off = _record(tmp_path / "r2", ["op0", "op1", "relu"])  # one kernel named unlike its op: tolerated
    collect_samples([_dump(tmp_path / "b.etdp")], one_off, strict=True)
    collect_samples([_dump(tmp_path / "c.etdp")], record)  # not strict (the job's own files): linked as Inspector would


@pytest.mark.slow
def test_real_etdumps_with_another_models_etrecord(tmp_path: Path) -> None:
    small, large = real_model(PORTABLE, layers=3), real_model(PORTABLE, layers=5)
    collect_samples([real_etdump(PORTABLE, layers=3)], small.etrecord, strict=True)
    with pytest.raises(AnalysisError, match="does not belong"):
        collect_samples([real_etdump(PORTABLE, layers=5)], small.etrecord, strict=True)
    with pytest.raises(AnalysisError, match="does not belong"):
        collect_samples([real_etdump(PORTABLE, layers=3)], real_model(XNNPACK, layers=3).etrecord, strict=True)
    with pytest.raises(AnalysisError, match="does not belong"):
        collect_samples([real_etdump(XNNPACK, layers=3)], large.etrecord, strict=True)


@pytest.mark.slow
@pytest.mark.parametrize(("pte", "record", "why"), [
    ((PORTABLE, 5), (PORTABLE, 3), "event 'native_call_permute_copy.out' ran instruction 12, which the ETRecord does not have"),
    ((PORTABLE, 3), (PORTABLE, 5), "the ETRecord links instruction 12, which calls nothing in the program"),
    ((XNNPACK, 3), (PORTABLE, 3), "a delegate call ran at instruction 0, where the ETRecord has no delegate"),
    ((PORTABLE, 3), (XNNPACK, 3), "ran instruction 1, which the ETRecord does not have"),
    ((XNNPACK, 5), (XNNPACK, 3), "the delegate's nodes carry debug handles"),
])
def test_a_programs_etrecord_is_checked_without_an_etdump(pte: tuple[str, int], record: tuple[str, int], why: str) -> None:
    """Issue 31: before anything runs, a given .pte and the ETRecord beside it (MLPs of one input and output shape,
    so only the program tells them apart); the program's own ETRecord is accepted."""
    from orchestrator.profiles.belongs import check_program_belongs
    from orchestrator.profiles.etrecord import load_etrecord

    program, foreign = real_model(*pte), real_model(*record)
    check_program_belongs(load_etrecord(program.etrecord), program.pte)
    with pytest.raises(AnalysisError) as refused:
        check_program_belongs(load_etrecord(foreign.etrecord), program.pte)
    assert str(refused.value).startswith(f"{foreign.etrecord} does not belong to the program {program.pte}: ")
    assert why in str(refused.value)
