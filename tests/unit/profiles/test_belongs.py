"""An ETRecord that does not belong to the ETDump's program is refused (issue 21 item 3), torch-free.

Synthetic ETDumps and ETRecords for each rule (an instruction the ETRecord lacks; portable kernels whose
ops are not the instruction's; a delegate call where the ETRecord has none), then real exports: the
ETDump of a 5-layer portable MLP read with a 3-layer one's ETRecord, and an XNNPACK ETDump with a
portable ETRecord. The files' own ETRecord is accepted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import AnalysisError
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
