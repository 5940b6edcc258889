"""The dashboard's data: each stored run read once (`RunEntry`, kept in DIR between publishes), its (device, model)
points keyed by their series (likeness.SeriesKey), and the series they make."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from orchestrator.store.series_rows import PointRow
from orchestrator.verdicts.changes import ChangePoint
from orchestrator.verdicts.likeness import SeriesKey, Settings
from orchestrator.verdicts.night_record import NightMark, PairMark


@dataclass(frozen=True)
class Point:
    """One (device, model) of a stored run, with its series' settings and the verdict its night gave it."""

    row: PointRow
    settings: Settings
    mark: PairMark | None = None  # None: no verdict recorded beside the run (a plain `etfarm run`, a first night)
    confirmed: bool | None = None  # a regression run again at once: did it show again (None: not run again)
    confirms: str | None = None  # this run is the confirmation job of that run's regression
    page: str | None = None  # the night's page (an absolute path as written)
    night: str | None = None

    @property
    def regressed(self) -> bool:
        return self.mark is not None and self.mark.regressed and self.confirms is None

    @property
    def interval(self) -> tuple[float, float] | None:
        medians = self.row.run_medians_ms
        return (min(medians), max(medians)) if medians else None


@dataclass(frozen=True)
class RunEntry:
    """A stored run as the dashboard read it; `token` says from which store state and verdict files."""

    token: str
    run_id: str
    started: str
    points: tuple[Point, ...]
    night: NightMark | None = None


@dataclass(frozen=True)
class Series:
    """A series of the store (device, model, settings), oldest point first, with its change points."""

    key: SeriesKey
    slug: str  # its page's file name (series/<slug>.html)
    points: tuple[Point, ...]
    changes: tuple[ChangePoint, ...]

    @property
    def backend(self) -> str:
        return dict(self.key.settings).get("backend", "?")

    @property
    def measured(self) -> tuple[Point, ...]:
        return tuple(p for p in self.points if p.row.p50_ms is not None)

    @property
    def latest(self) -> Point | None:
        measured = self.measured
        return measured[-1] if measured else None

    @property
    def verdict(self) -> Point | None:
        """The newest point a night judged (a confirmation job's second verdict is its night's, on the first)."""
        return next((p for p in reversed(self.points) if p.mark is not None and p.confirms is None), None)

    @property
    def moved(self) -> str:
        """When it last moved: its newest change point or regression ("" never)."""
        times = [c.started for c in self.changes] + [p.row.started for p in self.points if p.regressed]
        return max(times, default="")

    def commit_before(self, run_id: str) -> str | None:
        """The commit of the point before `run_id`'s (the start of the range a change came in)."""
        previous = None
        for p in self.points:
            if p.row.run_id == run_id:
                return previous
            previous = p.row.git_commit
        return None


@dataclass(frozen=True)
class Night:
    """A night of `etfarm nightly`: its runs, page and final verdict counts."""

    night_id: str
    started: str
    runs: tuple[str, ...]
    page: str | None
    verdicts: Mapping[str, int]

