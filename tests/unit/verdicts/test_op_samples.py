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
    found = read_op_samples(files)
    new, old = found.ops, reference.per_op_runs(files)
    assert len(new) == len(old) > 6  # keyed by identity now (op_identity.py), in the same order as by name
    for (key, (index, runs)), (old_key, (old_index, old_runs)) in zip(new.items(), old.items(), strict=True):
        assert (key[0], found.name(key), index) == (old_key[0], old_key[1], old_index)
        assert len(runs) == len(old_runs) and all(np.array_equal(a, b) for a, b in zip(runs, old_runs, strict=True))
    assert not any(found.name(key).startswith(("Method::", "Program::")) for key in new)


def test_no_profile_events_no_ops(tmp_path: Path) -> None:
    path = tmp_path / "empty.etdp"
    path.write_bytes(build_etdump([Run("Execute", [])]))
    assert read_op_samples([path]).ops == {}


def _kernel_dump(path: Path, precision: str, slow: int, runs: int = 3) -> list[Path]:
    """`runs` ETDumps of one XNNPACK call running two convolutions named as `precision`'s CPU names them."""
    paths = []
    for k in range(runs):
        t, events = 1000, []
        for it in range(6):
            for i in range(2):
                name = f"Convolution (NHWC, {precision}) IGEMM #{i + 1}"
                events.append(Profile(name, instr=1, dd_str=name, start=t, end=t + 100 * (i + 1) * slow + it + k))
                t += 1000
        path.mkdir(parents=True, exist_ok=True)
        file = path / f"{precision}-{k}.etdp"
        file.write_bytes(build_etdump([Run("Execute", events)]))
        paths.append(file)
    return paths


def test_one_layer_joins_across_cpus_by_its_identity(tmp_path: Path) -> None:
    """F32 kernels on one side, PF32 on the other: by name nothing is compared; by identity both convolutions are."""
    from orchestrator.profiles.op_identity import OpIdentity
    from orchestrator.verdicts.compare import Side, compare_sides
    from orchestrator.verdicts.sides import SideRun

    conv = "aten.convolution.default"
    identities = ((("Execute", 0), OpIdentity("features.0", conv)), (("Execute", 1), OpIdentity("features.3", conv)))
    sides = []
    for precision, slow in (("F32", 1), ("PF32", 2)):
        runs = tuple(SideRun(f"run-{k}", (1.0, 1.1, 1.2), p) for k, p in enumerate(_kernel_dump(tmp_path, precision, slow)))
        sides.append(Side(precision, "dev", "m", runs, identities=identities))
    pair = compare_sides(*sides)
    assert [(o.op, o.event_name, o.op_basis) for o in pair.ops] == [
        ("features.0 convolution", "Convolution (NHWC, PF32) IGEMM #1", "model"),
        ("features.3 convolution", "Convolution (NHWC, PF32) IGEMM #2", "model")]
    assert pair.ops_skipped == 0 and all(o.estimate.ratio > 1.5 for o in pair.ops)
    by_name = compare_sides(*(Side(s.source, s.device, s.model, s.runs) for s in sides))  # no stats.csv: names only
    assert [o.op for o in by_name.ops] == ["Convolution", "Convolution #2"]  # the XNNPACK family still joins them


def test_a_baseline_recorded_before_identities_still_joins_its_ops(tmp_path: Path) -> None:
    """One device, the baseline's stats.csv from before identities (a kernel keyed by its XNNPACK family), the new
    run's by ATen op: the identities cannot line up, the names do, so every op is still compared."""
    from orchestrator.profiles.op_identity import EVENT, OpIdentity
    from orchestrator.verdicts.compare import Side, compare_sides
    from orchestrator.verdicts.sides import SideRun

    old = tuple((("Execute", k), OpIdentity(f"features.{3 * k}", "Convolution", 0, EVENT)) for k in range(2))
    new = tuple((("Execute", k), OpIdentity(f"features.{3 * k}", "aten.convolution.default")) for k in range(2))
    sides = [Side(label, "dev", "m", tuple(SideRun(f"run-{k}", (1.0, 1.1, 1.2), p)
                                         for k, p in enumerate(_kernel_dump(tmp_path / label, "F32", 1))),
                  identities=identities) for label, identities in (("a", old), ("b", new))]
    pair = compare_sides(*sides)
    assert [o.event_name for o in pair.ops] == ["Convolution (NHWC, F32) IGEMM #1", "Convolution (NHWC, F32) IGEMM #2"]
    assert pair.ops_skipped == 0
