"""The dashboard's data: each (device, model) point of a stored run as read now (`Point`), a series' points as
columns (`SeriesData`, kept in DIR/data/series/ between publishes: a night appends to them), and what the index
needs of a series (`Summary`, kept in DIR/manifest.json: a series no night touched is not read again)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from orchestrator.results.night_marks import PairMark
from orchestrator.store.series_rows import PointRow
from orchestrator.verdicts.likeness import SeriesKey, Settings

# A series' columns, one value per point, oldest point first: `started` in UTC (`YYYY-MM-DD HH:MM:SS`, as the
# charts take it), `commit` shortened, `link` the night's page from DIR/series/, `layers` each point's p50 of the
# series' `layer_names` (a list as long as the names it knew then).
COLUMNS = ("run", "started", "commit", "status", "p50", "lo", "hi", "flagged", "load", "rss", "pss", "ttft", "tps",
           "verdict", "regressed", "ratio", "confirmed", "confirms", "link", "culprit", "layers", "uj", "delegate")


@dataclass(frozen=True)
class Point:
    """One (device, model) of a stored run, with its series' settings and the verdict its night gave it."""

    row: PointRow
    settings: Settings
    mark: PairMark | None = None  # None: no verdict recorded beside the run (a plain `etfarm run`, a first night)
    confirmed: bool | None = None  # a regression run again at once: did it show again (None: not run again)
    confirms: str | None = None  # this run is the confirmation job of that run's regression
    page: str | None = None  # the night's page (an absolute path as written)
    culprit: str | None = None  # the commit its night's bisect named for this regression (plan `bisect: true`)

    @property
    def regressed(self) -> bool:
        """A regression its night found (a confirmation job's verdict is its night's, on the first run)."""
        return self.mark is not None and self.mark.regressed and self.confirms is None

    def values(self, link: str, layer_names: list[str]) -> tuple[Any, ...]:
        """The point as a row of COLUMNS; its layers' names not yet in `layer_names` are added to it."""
        row, mark = self.row, self.mark
        medians = row.run_medians_ms
        costs = dict(row.layers)
        layer_names.extend(n for n in costs if n not in layer_names)
        return (row.run_id, utc(row.started), row.git_commit[:12] if row.git_commit else None, row.status, _shown(row.p50_ms),
                _shown(min(medians)) if medians else None, _shown(max(medians)) if medians else None, row.flagged,
                _shown(row.load_ms), row.peak_rss_kb, row.pss_kb, _shown(row.ttft_ms), _shown(row.decode_tokens_per_s),
                mark.verdict if mark else None, self.regressed, mark.ratio if mark else None, self.confirmed,
                self.confirms, link, self.culprit, [_shown(costs.get(n)) for n in layer_names] if costs else [],
                _shown(row.uj_per_inference), row.delegate_bytes)


def _shown(value: float | None) -> float | None:
    """A figure to 6 significant digits: what a chart or a table can show (timer resolution is coarser), and a
    series' data script half as long (the site is made from the store, which keeps every digit). Never a night's
    ratio: rounded twice (6 digits, then the 2 decimals `ratio` shows) 16.185 read 16.18x where the night's page,
    from every digit, said 16.19x."""
    return None if value is None else float(f"{value:.6g}")


@functools.lru_cache(maxsize=4096)  # a run's points share its start
def utc(started: str) -> str:
    """A run's start (ISO 8601, any offset) as UTC `YYYY-MM-DD HH:MM:SS`: sortable, and what the charts' axes take."""
    try:
        moment = datetime.fromisoformat(started)
    except ValueError:
        try:
            moment = datetime.strptime(started, "%Y-%m-%dT%H:%M:%S%z")
        except ValueError:
            return started
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


@dataclass(frozen=True)
class SeriesData:
    """A series' every point as columns (COLUMNS), oldest first."""

    key: SeriesKey
    slug: str  # its page's file name (series/<slug>.html)
    columns: Mapping[str, Sequence[Any]]
    layer_names: Sequence[str] = ()

    def __len__(self) -> int:
        return len(self.columns["run"])

    def commit_before(self, run_id: str) -> str | None:
        """The commit of the point before `run_id`'s: where the range a change came in starts."""
        runs = self.columns["run"]
        k = runs.index(run_id) if run_id in runs else 0
        return self.columns["commit"][k - 1] if k > 0 else None


@dataclass(frozen=True)
class Change:
    """A change point of the series: where its latency moved, and the commits it came in between."""

    started: str
    run_id: str
    before_ms: float
    after_ms: float
    commits: str

    @property
    def ratio(self) -> float:
        return self.after_ms / self.before_ms


@dataclass(frozen=True)
class Regression:
    """A point a night found regressed."""

    started: str
    run_id: str
    ratio: float | None
    confirmed: bool | None  # None: not run again
    commits: str
    link: str  # its night's page from DIR/series/ ("" none)
    culprit: str = ""  # the commit its night's bisect named ("" none)


@dataclass(frozen=True)
class Summary:
    """What the index says of a series."""

    key: SeriesKey
    slug: str
    points: int
    latest: tuple[float, float | None, float | None] | None  # p50, and the process runs' lowest and highest median
    verdict: str | None  # the newest verdict a night gave it
    verdict_regressed: bool
    verdict_confirmed: bool | None
    changes: tuple[Change, ...]
    regressions: tuple[Regression, ...]
    trend: tuple[float, ...]  # the newest p50s, for the index's trend line
    trend_regressed: tuple[bool, ...]
    moved: str  # when it last moved: its newest change point or regression ("" never)

    @property
    def backend(self) -> str:
        return dict(self.key.settings).get("backend", "?")

    def to_json(self) -> dict[str, Any]:
        return {"device": self.key.device, "model": self.key.model, "settings": [list(s) for s in self.key.settings],
                "slug": self.slug, "points": self.points, "latest": self.latest, "verdict": self.verdict,
                "verdict_regressed": self.verdict_regressed, "verdict_confirmed": self.verdict_confirmed,
                "changes": [list(c.__dict__.values()) for c in self.changes],
                "regressions": [list(r.__dict__.values()) for r in self.regressions], "trend": self.trend,
                "trend_regressed": self.trend_regressed, "moved": self.moved}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Summary:
        key = SeriesKey(data["device"], data["model"], tuple((str(k), str(v)) for k, v in data["settings"]))
        latest = data["latest"]
        return cls(key, data["slug"], int(data["points"]), tuple(latest) if latest else None,  # type: ignore[arg-type]
                   data["verdict"], bool(data["verdict_regressed"]), data["verdict_confirmed"],
                   tuple(Change(*c) for c in data["changes"]), tuple(Regression(*r) for r in data["regressions"]),
                   tuple(data["trend"]), tuple(data["trend_regressed"]), data["moved"])


@dataclass(frozen=True)
class Night:
    """A night of `etfarm nightly`: its runs, page and final verdict counts."""

    night_id: str
    started: str
    runs: tuple[str, ...]
    page: str | None
    verdicts: Mapping[str, int]
