"""verdicts/op_samples.read_op_samples: per-op samples read with numpy equal what the pandas path gave."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from orchestrator.verdicts.op_samples import read_op_samples
from tests.helpers import verdicts_reference as reference
from tests.helpers.etdumps import Profile, Run, build_etdump, typical_runs


def test_same_ops_order_indices_and_samples_as_before(tmp_path: Path) -> None:
    files = []
    for k, (iterations, layers) in enumerate([(4, 3), (5, 3), (3, 4)]):  # the third file: another signature
        runs = typical_runs(iterations=iterations, layers=layers, base=1_000_000 * (k + 1))
        runs.append(Run("Execute", [Profile("native_call_op0.out", instr=0, start=7, end=19 + k),
                                    Profile("native_call_op0.out", instr=1, start=20, end=40 + k)]))
        path = tmp_path / f"run-{k}.etdp"
        path.write_bytes(build_etdump(runs))
        files.append(path)
    new = read_op_samples(files).ops
    old = reference.per_op_runs(files)
    assert list(new) == list(old) and len(new) > 6
    for key, (index, runs) in old.items():
        assert new[key][0] == index
        assert len(new[key][1]) == len(runs) and all(np.array_equal(a, b) for a, b in zip(new[key][1], runs, strict=True))
    assert not any(name.startswith(("Method::", "Program::")) for _, name, _ in new)


def test_no_profile_events_no_ops(tmp_path: Path) -> None:
    path = tmp_path / "empty.etdp"
    path.write_bytes(build_etdump([Run("Execute", [])]))
    assert read_op_samples([path]).ops == {}
