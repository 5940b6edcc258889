"""run/job_stats.py: the job writes its samples beside stats.csv, and a resumed job keeps the samples of what it
does not run again."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from orchestrator.profiles.stat_rows import ModelStats, model_stats, read_stats_csv
from orchestrator.results.samples import pair_samples
from orchestrator.run.job_stats import JobStats
from tests.helpers.etdumps import build_etdump, typical_runs


def _stats(root: Path, device: str, runs: int, base: int) -> ModelStats:
    paths = []
    for k in range(runs):
        path = root / device / "m" / f"run-{k + 1}" / "etdump.etdp"
        path.parent.mkdir(parents=True)
        path.write_bytes(build_etdump(typical_runs(iterations=3, layers=2, base=base + k)))
        paths.append(path)
    return model_stats(device, "m", paths, None)


def test_a_resumed_job_keeps_the_recorded_samples_and_writes_the_new(tmp_path: Path) -> None:
    first = JobStats(tmp_path, ["a", "b"], ["m"])
    kept = _stats(tmp_path, "a", 2, 1000)
    first.add(kept)
    assert first.write(print) is None
    assert (tmp_path / "samples.npz").is_file() and len(read_stats_csv(tmp_path / "stats.csv")) == len(kept.rows)

    resumed = JobStats.resumed(tmp_path, ["a", "b"], ["m"])
    resumed.keep_recorded("a")
    resumed.add(_stats(tmp_path, "b", 3, 5000))
    assert resumed.write(print) is None
    recorded = pair_samples(tmp_path / "samples.npz", "a", "m")
    assert kept.samples is not None and recorded is not None
    assert np.array_equal(recorded.samples.duration_ms, kept.samples.duration_ms)
    assert recorded.samples.run_labels == ("run-1", "run-2")
    new = pair_samples(tmp_path / "samples.npz", "b", "m")
    assert new is not None and new.samples.run_labels == ("run-1", "run-2", "run-3")
