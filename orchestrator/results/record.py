"""The record of a finished run: one object for what its directory holds, each part read when first asked.

    DIR/manifest.json   RunRecord.job           the results model (results/model.py `load_manifest`)
    DIR/stats.csv       RunRecord.rows(d, m)    per-event statistics (profiles/stat_rows.py, the one reader)
    DIR/samples.npz     RunRecord.samples(d, m) the per-op samples they came from (results/samples.py)
    DIR/verdicts.json   RunRecord.verdicts      the comparison recorded beside it (results/verdicts_file.py)

Readers that start from a run directory take a `RunRecord` rather than a path and a reader of their own: the
command or workflow that is given a path makes the record, once. A job still in memory hands its `Job` and its
statistics in (`RunRecord(root, job, rows)`), and neither file is read. numpy is imported only when statistics or
samples are asked for.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.base.errors import AnalysisError, DataError
from orchestrator.profiles.file_memo import FileMemo, file_key
from orchestrator.results.layout import MANIFEST, NIGHT, SAMPLES, STATS, VERDICTS
from orchestrator.results.model import Job, load_manifest
from orchestrator.results.verdicts_file import RecordedPair, recorded_pairs

if TYPE_CHECKING:
    from orchestrator.profiles.stat_rows import StatRow
    from orchestrator.results.night_marks import NightMark, PairMark
    from orchestrator.results.samples import PairSamples, SamplesFile


class RunRecord:
    """A finished run's directory, read lazily: each file once, when first asked (from one thread)."""

    def __init__(self, root: str | Path, job: Job | None = None, rows: Sequence[StatRow] | None = None) -> None:
        self.root = Path(root)
        if job is not None:
            self.__dict__["job"] = job  # what `job` would hold once read: no manifest is read
        if rows is not None:
            self.__dict__["all_rows"] = tuple(rows)  # the job's statistics in memory: stats.csv is not read

    def __repr__(self) -> str:
        return f"RunRecord({str(self.root)!r})"

    # Records of one directory are one run's: sides built from them compare equal, as they did when they held its
    # path, so what is cached per side (verdicts/sides.py `per_op_runs`) is found again.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunRecord) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    @property
    def present(self) -> bool:
        """Whether the directory holds a manifest (a stored run whose directory is gone, or a path that names no run,
        does not)."""
        return "job" in self.__dict__ or (self.root / MANIFEST).is_file()

    @cached_property
    def job(self) -> Job:
        """The results model (a DataError naming the file when it is missing or not whole)."""
        return load_manifest(self.root)

    @cached_property
    def all_rows(self) -> tuple[StatRow, ...]:
        """Every row of stats.csv, in its order (a DataError when the file is missing or not whole)."""
        from orchestrator.profiles.stat_rows import read_stats_csv

        return read_stats_csv(self.root / STATS)

    @cached_property
    def stats(self) -> dict[tuple[str, str], tuple[StatRow, ...]]:
        """stats.csv's rows per (device, model) (a DataError when it is not whole)."""
        if "all_rows" in self.__dict__:
            from orchestrator.profiles.stat_rows import group_rows

            return group_rows(self.all_rows)
        return grouped_stats(self.root / STATS)

    def stats_or_none(self) -> dict[tuple[str, str], tuple[StatRow, ...]]:
        """stats.csv's rows per (device, model); none when it is missing or unreadable (ops keyed by their names)."""
        try:
            return self.stats
        except (DataError, AnalysisError):
            return {}

    def rows(self, device: str, model: str) -> tuple[StatRow, ...]:
        return self.stats.get((device, model), ())

    @cached_property
    def samples_file(self) -> SamplesFile | None:
        """The run's samples file; None when it has none it can read (a run written before it: read its ETDumps)."""
        from orchestrator.results.samples import read_samples

        return read_samples(self.root / SAMPLES)

    def samples(self, device: str, model: str) -> PairSamples | None:
        """A (device, model)'s per-op samples as the job recorded them; None when the samples file lacks them."""
        found = self.samples_file
        return found.pair(device, model) if found is not None else None

    @cached_property
    def verdicts(self) -> tuple[RecordedPair, ...]:
        """The comparison recorded beside the run, pair by pair (none when nothing judged it)."""
        return recorded_pairs(self.root)

    @cached_property
    def night(self) -> tuple[dict[tuple[str, str], PairMark], NightMark | None]:
        """The verdict marks per (device, model) and the night the run belongs to (none: a plain run)."""
        from orchestrator.results.night_marks import read_marks

        return read_marks(self.root, self.verdicts)


def judged_token(root: Path | str | None) -> str:
    """When the verdicts and the night beside the run directory `root` were last written ("-" for each one missing,
    and for both without a directory): a night writes them after the job, so a reader that keeps what it read of a
    run checks this too."""
    parts = []
    for name in (VERDICTS, NIGHT):
        try:
            parts.append(str(os.stat(Path(root) / name).st_mtime_ns) if root else "-")
        except OSError:
            parts.append("-")
    return "|".join(parts)


def run_root(path: Path) -> Path | None:
    """The run directory a path names: a directory holding a manifest, or a manifest itself; None when neither."""
    if path.is_dir() and (path / MANIFEST).is_file():
        return path
    if path.name == MANIFEST and path.is_file():
        return path.parent
    return None


def grouped_stats(path: Path) -> dict[tuple[str, str], tuple[StatRow, ...]]:
    """A stats.csv's rows per (device, model), kept while the file is unchanged: a night reads one run's sides many
    times, each through a record of its own."""
    from orchestrator.profiles.stat_rows import group_rows, read_stats_csv

    try:
        key = file_key(path)
    except AnalysisError:  # no such file (no device measured anything): no rows, as read_stats_csv says
        return group_rows(read_stats_csv(path))
    return _GROUPED.get([key], lambda: group_rows(read_stats_csv(path)))


_GROUPED: FileMemo[dict[tuple[str, str], tuple[StatRow, ...]]] = FileMemo()
