"""Read stored runs into the dashboard's points: which runs are new or changed since the last publish (`tokens`),
and those runs' points (`read_points`), in a few set-based queries whatever their number.

A run's points get their series' settings from the stored run itself (likeness.SeriesKey.of, the one rule for
what a series is), their verdicts from DIR/verdicts.json and their night from DIR/night.json (results/night_marks.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.results.model import BASELINE_SUFFIX, Job
from orchestrator.results.night_marks import NightMark
from orchestrator.results.record import RunRecord, judged_token
from orchestrator.store import Store
from orchestrator.store.series_rows import PointRow, RunStamp
from orchestrator.verdicts.likeness import SeriesKey

from .model import Point


@dataclass(frozen=True)
class StampedJob:
    """A stored run as the dashboard tracks it: `token` says from which store state and verdict files it was read."""

    run_id: str
    started: str
    token: str
    run_dir: str | None


@dataclass(frozen=True)
class ReadRun:
    """A run read now: its points and its night."""

    run: StampedJob
    points: tuple[Point, ...]
    night: NightMark | None


NIGHTS_DIR = "nights"  # the site's copies of the nights' pages: the site links only to what is inside it


def night_copy(night: NightMark | None) -> str | None:
    """The site's copy of the night's page (`nights/<night id>.html`, relative to DIR), when the night wrote one."""
    if night is None or not night.page or not Path(night.page).is_file():
        return None
    return f"{NIGHTS_DIR}/{night.night_id}.html"  # the id was checked against the id grammar when night.json was read


def stored_runs(store: Store) -> list[StampedJob]:
    """Every stored run, oldest first, with its token."""
    return [StampedJob(s.run_id, s.started, _token(s), s.run_dir) for s in store.series_rows().stamps()]


def _token(stamp: RunStamp) -> str:
    """The store's stamp of the run and the state of the verdict files beside it (a night writes them after)."""
    return f"{stamp.token}|{judged_token(stamp.run_dir)}"


def read_points(store: Store, runs: Sequence[StampedJob]) -> list[ReadRun]:
    rows = store.series_rows().points([r.run_id for r in runs])
    return [_read_run(store, run, rows.get(run.run_id, [])) for run in runs]


def _read_run(store: Store, run: StampedJob, rows: Sequence[PointRow]) -> ReadRun:
    job = store.job(run.run_id, keys_only=True)
    marks, night = RunRecord(run.run_dir).night if run.run_dir else ({}, None)
    points = tuple(
        Point(row, SeriesKey.of(job, row.device, row.model).settings, marks.get((row.device, row.model)),
              night.confirmed(run.run_id, row.device, row.model) if night is not None else None,
              _confirms(night, job, run.run_id, row), night_copy(night),
              night.culprit(run.run_id, row.device, row.model) if night is not None else None)
        for row in rows if not _a_confirmations_baseline(job, row.model))
    return ReadRun(run, points, night)


def _confirms(night: NightMark | None, job: Job, run_id: str, row: PointRow) -> str | None:
    """The night's job whose regression this run measured again, if it is a confirmation job: the night names its
    first confirmation job; the jobs pooled after it ran `<model>-baseline` beside the model (Job.confirms)."""
    if night is None:
        return None
    first = night.confirms(run_id)
    if first is None and job.confirms(row.model):
        first = night.first_run(row.device, row.model)
    return first


def _a_confirmations_baseline(job: Job, model: str) -> bool:
    """The baseline's program run again in a night's interleaved confirmation: a point of no series of its own."""
    confirmed = model.removesuffix(BASELINE_SUFFIX)
    return confirmed != model and job.model_artifacts(confirmed) is not None and job.confirms(confirmed)
