"""results/samples.py: the samples file gives back what reading the ETDumps again would (every column, the runs of
several sets joined as one read of their files), and says nothing of what it does not hold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from orchestrator.profiles.analysis_core import SampleSet, collect_samples, summary_records
from orchestrator.profiles.stat_rows import ModelStats, model_stats
from orchestrator.results.record import RunRecord
from orchestrator.results.samples import joined_runs, pair_samples, read_samples, write_samples
from orchestrator.verdicts.op_samples import read_op_samples, recorded_op_samples
from tests.helpers.etdumps import Profile, Run, build_etdump, typical_runs


def _dumps(root: Path, shapes: list[tuple[int, int]], extra: bool = True) -> list[Path]:
    """One ETDump per run directory (`run-k/etdump.etdp`), each of its own shape: the last may have another block
    signature, so blocks are keyed `Execute#2` by first appearance."""
    paths = []
    for k, (iterations, layers) in enumerate(shapes):
        runs = typical_runs(iterations=iterations, layers=layers, base=1_000_000 * (k + 1))
        if extra:
            runs.append(Run("Execute", [Profile("native_call_op0.out", instr=0, start=7, end=19 + k)]))
        path = root / f"run-{k + 1}" / "etdump.etdp"
        path.parent.mkdir(parents=True)
        path.write_bytes(build_etdump(runs))
        paths.append(path)
    return paths


def _same(a: SampleSet, b: SampleSet) -> None:
    for column in ("run", "block", "event_index", "iteration", "duration_ms"):
        x, y = getattr(a, column), getattr(b, column)
        assert x.dtype == y.dtype and np.array_equal(x, y), column
    assert a.block_keys == b.block_keys and a.block_events == b.block_events
    assert a.block_signatures == b.block_signatures and a.block_order == b.block_order


def test_a_pair_reads_back_as_it_was_written(tmp_path: Path) -> None:
    paths = _dumps(tmp_path, [(4, 3), (5, 3), (3, 4)])
    stats = model_stats("pixel8", "mlp", paths, None)
    assert stats.samples is not None
    contended = np.zeros(stats.samples.duration_ms.size, bool)
    contended[[1, 5]] = True
    other = model_stats("rpi5", "mlp", paths[:1], None)
    assert write_samples(tmp_path / "samples.npz", [ModelStats("pixel8", "mlp", stats.rows, stats.samples, contended),
                                                    ModelStats("rpi5", "cnn", ()), other])

    found = pair_samples(tmp_path / "samples.npz", "pixel8", "mlp")
    assert found is not None and found.samples.run_labels == ("run-1", "run-2", "run-3")
    _same(found.samples, stats.samples)
    assert np.array_equal(found.contended, contended)
    back = found.as_stats(stats.rows)
    assert back.kept is not None and back.kept.duration_ms.size == stats.samples.duration_ms.size - 2
    assert summary_records(found.samples) == summary_records(stats.samples)  # without the ETRecord, as compare reads
    assert read_samples(tmp_path / "samples.npz").pairs() == [("pixel8", "mlp"), ("rpi5", "mlp")]  # type: ignore[union-attr]
    assert pair_samples(tmp_path / "samples.npz", "rpi5", "cnn") is None  # no samples in memory: not recorded


def test_runs_joined_across_sets_key_blocks_as_one_read_of_their_files(tmp_path: Path) -> None:
    """A side pooled over two jobs, and a subset of a job's runs: blocks keyed and samples ordered as collect_samples
    of exactly those files keys and orders them (the block only run-3 had is `Execute#2` only when it is there)."""
    a = _dumps(tmp_path / "a", [(4, 3), (5, 3), (3, 4)])
    b = _dumps(tmp_path / "b", [(3, 4), (2, 3)])
    set_a, set_b = model_stats("d", "m", a, None).samples, model_stats("d", "m", b, None).samples
    assert set_a is not None and set_b is not None
    for pieces, files in [
        ([(set_a, "run-1"), (set_a, "run-2"), (set_a, "run-3"), (set_b, "run-1"), (set_b, "run-2")], [*a, *b]),
        ([(set_a, "run-3"), (set_a, "run-1")], [a[2], a[0]]),
        ([(set_b, "run-2"), (set_a, "run-3")], [b[1], a[2]]),
    ]:
        joined = joined_runs(pieces)
        direct = collect_samples(files, run_labels=[label for _, label in pieces])
        _same(joined, direct)


def test_per_op_samples_from_the_file_equal_those_from_the_etdumps(tmp_path: Path) -> None:
    paths = _dumps(tmp_path, [(4, 3), (5, 3), (3, 4)])
    write_samples(tmp_path / "samples.npz", [model_stats("d", "m", paths, None)])
    labels = ["run-3", "run-1"]
    found = recorded_op_samples([(RunRecord(tmp_path), label) for label in labels], "d", "m")
    direct = read_op_samples([paths[2], paths[0]])
    assert found is not None and list(found.ops) == list(direct.ops) and found.names == direct.names
    for key, (index, runs) in direct.ops.items():
        assert found.ops[key][0] == index
        assert all(np.array_equal(x, y) for x, y in zip(found.ops[key][1], runs, strict=True))
    assert recorded_op_samples([(RunRecord(tmp_path), "run-9")], "d", "m") is None  # a run it does not hold


@pytest.mark.parametrize("content", [b"", b"not a zip", None])
def test_no_file_or_an_unreadable_one_is_read_as_none(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "samples.npz"
    if content is not None:
        path.write_bytes(content)
    assert read_samples(path) is None and pair_samples(path, "d", "m") is None


def test_nothing_to_write_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "samples.npz"
    write_samples(path, [model_stats("d", "m", _dumps(tmp_path, [(2, 2)]), None)])
    assert path.is_file()
    assert not write_samples(path, [ModelStats("d", "m", ())]) and not path.exists()


@pytest.mark.parametrize("keep", [0.5, 0.98])
def test_a_file_cut_short_is_never_half_read(tmp_path: Path, keep: float) -> None:
    """A samples file a full disk or a copy cut: read as none (its readers then read the ETDumps), never in part."""
    path = tmp_path / "samples.npz"
    write_samples(path, [model_stats("d", "m", _dumps(tmp_path, [(4, 3), (5, 3)]), None)])
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])
    assert pair_samples(path, "d", "m") is None
