"""A job's statistics in memory, per (device, model), and its stats.csv (docs/architecture.md, "The job engine").

Device sessions and farm tasks hand in `ModelStats` (rows and the samples they came from) as
models finish; a resumed job's finished (device, model)s keep the rows its stats.csv recorded and
the samples its samples.npz recorded (read once, before anything rewrites them). stats.csv is written
in job order (devices as the job lists them, then models) through profiles/stat_rows.py, the samples
beside it through results/samples.py; a full host disk is said and returned as the job's problem,
never raised: everything else is on disk already.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from orchestrator.base.cache import write_text_atomic
from orchestrator.base.errors import DISK_FULL_ERRNOS
from orchestrator.profiles.rollups import rollup, rollups_csv
from orchestrator.profiles.stat_rows import ModelStats, StatRow, group_rows, read_stats_csv, write_stats_csv
from orchestrator.results.samples import PairSamples, read_samples, write_samples
from orchestrator.run.rundir import ROLLUPS, SAMPLES, STATS


class JobStats:
    def __init__(self, root: Path, devices: Sequence[str], models: Sequence[str],
                 recorded: Mapping[tuple[str, str], tuple[StatRow, ...]] | None = None,
                 recorded_samples: Mapping[tuple[str, str], PairSamples] | None = None) -> None:
        self.path = root / STATS
        self._order = {(d, m): k for k, (d, m) in enumerate((d, m) for d in devices for m in models)}
        self._recorded = dict(recorded or {})
        self._recorded_samples = dict(recorded_samples or {})
        self._stats: dict[tuple[str, str], ModelStats] = {}
        self._lock = threading.Lock()

    @classmethod
    def resumed(cls, root: Path, devices: Sequence[str], models: Sequence[str]) -> JobStats:
        """A resumed job's: the rows its stats.csv holds, and the samples its samples.npz holds (read now, as the
        file is rewritten as soon as a model finishes), are kept for what is not run again."""
        found = read_samples(root / SAMPLES)
        pairs = [found.pair(d, m) for d, m in found.pairs()] if found is not None else []
        return cls(root, devices, models, group_rows(read_stats_csv(root / STATS)),
                   {(p.device, p.model): p for p in pairs if p is not None})

    def add(self, stats: ModelStats) -> None:
        with self._lock:
            self._stats[(stats.device, stats.model)] = stats

    def keep_recorded(self, device: str, model: str | None = None) -> None:
        """A (device, model) the recorded job completed (every model of `device` when None): its rows stay."""
        for (d, m), rows in self._recorded.items():
            if d == device and model in (None, m):
                samples = self._recorded_samples.get((d, m))  # none: recorded before the samples file
                self.add(samples.as_stats(rows) if samples is not None else ModelStats(d, m, rows))

    def has(self, device: str, model: str) -> bool:
        return (device, model) in self._stats

    def all(self) -> tuple[ModelStats, ...]:
        """Every (device, model)'s statistics, in job order."""
        with self._lock:
            keys = sorted(self._stats, key=lambda k: self._order.get(k, len(self._order)))
            return tuple(self._stats[k] for k in keys)

    def write(self, say: Callable[[str], None]) -> str | None:
        """stats.csv of everything so far, its roll-ups (rollups.csv) and the samples (samples.npz); nothing when there
        is nothing; the problem when the disk is full."""
        everything = self.all()
        rows = [row for stats in everything for row in stats.rows]
        if not rows:
            return None
        try:
            write_stats_csv(self.path, rows)
            write_text_atomic(self.path.with_name(ROLLUPS), rollups_csv([rollup(s.device, s.model, s.rows)
                                                                         for s in everything]))
            write_samples(self.path.with_name(SAMPLES), everything)
        except OSError as exc:
            if exc.errno not in DISK_FULL_ERRNOS:
                raise
            problem = f"host disk full: {self.path}"
            say(f"{problem}: statistics not written (the raw artifacts are kept; `etfarm analyze` them later)")
            return problem
        return None
