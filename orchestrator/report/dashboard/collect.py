"""Read the store into the dashboard's runs, each stored run once: a run read by an earlier publish (same stamp, same
verdict files beside it) is taken from what that publish kept in DIR (`entry_json` / `entry_from_json`).

A run's points get their series' settings from the stored run itself (likeness.SeriesKey.of, the one rule for
what a series is), their verdicts from DIR/verdicts.json and their night from DIR/night.json (night_record.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orchestrator.store import Store
from orchestrator.store.series_rows import PointRow, RunStamp
from orchestrator.verdicts.baseline import VERDICTS_JSON
from orchestrator.verdicts.likeness import SeriesKey
from orchestrator.verdicts.night_record import NIGHT_JSON, NightMark, PairMark, read_marks

from .model import Point, RunEntry


def read_runs(store: Store, kept: Mapping[str, RunEntry]) -> tuple[list[RunEntry], set[str]]:
    """Every stored run, oldest first, and the ids of those read from the store now (new or changed since `kept`)."""
    rows = store.series_rows()
    entries, fresh = [], set()
    for stamp in rows.stamps():
        token = _token(stamp)
        entry = kept.get(stamp.run_id)
        if entry is None or entry.token != token:
            entry = _read_run(store, stamp, token, rows.points(stamp.run_id))
            fresh.add(stamp.run_id)
        entries.append(entry)
    return entries, fresh


def _token(stamp: RunStamp) -> str:
    """The store's stamp of the run and the state of the verdict files beside it (a night writes them after)."""
    parts = [stamp.token]
    for name in (VERDICTS_JSON, NIGHT_JSON):
        try:
            parts.append(str(os.stat(Path(stamp.run_dir) / name).st_mtime_ns) if stamp.run_dir else "-")
        except OSError:
            parts.append("-")
    return "|".join(parts)


def _read_run(store: Store, stamp: RunStamp, token: str, rows: list[PointRow]) -> RunEntry:
    job = store.job(stamp.run_id, keys_only=True)
    marks, night = read_marks(Path(stamp.run_dir)) if stamp.run_dir else ({}, None)
    confirms = night.confirms(stamp.run_id) if night is not None else None
    points = tuple(
        Point(row, SeriesKey.of(job, row.device, row.model).settings, marks.get((row.device, row.model)),
              night.confirmed(stamp.run_id, row.device, row.model) if night is not None else None, confirms,
              night.page if night is not None else None, night.night_id if night is not None else None)
        for row in rows)
    return RunEntry(token, stamp.run_id, stamp.started, points, night)


# ---- kept between publishes (DIR/data/runs/<run id>.json) ------------------------------------------------


def entry_json(entry: RunEntry) -> dict[str, Any]:
    night = entry.night
    return {"token": entry.token, "run_id": entry.run_id, "started": entry.started,
            "night": None if night is None else [night.night_id, night.page, dict(night.verdicts),
                                                 [dict(c) for c in night.confirmations]],
            "points": [[list(p.row.__dict__.values()), [list(s) for s in p.settings],
                        None if p.mark is None else [p.mark.verdict, p.mark.regressed, p.mark.ratio],
                        p.confirmed, p.confirms, p.page, p.night] for p in entry.points]}


def entry_from_json(data: Mapping[str, Any]) -> RunEntry:
    """An entry kept by an earlier publish (any shape error is the caller's: it reads the run again)."""
    night = data["night"]
    points = []
    for row, settings, mark, confirmed, confirms, page, night_id in data["points"]:
        *head, medians, flagged, load, rss, pss, ttft, tps, layers = row
        points.append(Point(PointRow(*head, tuple(medians), flagged, load, rss, pss, ttft, tps,
                                     tuple((str(n), float(v)) for n, v in layers)),
                            tuple((str(k), str(v)) for k, v in settings),
                            None if mark is None else PairMark(*mark), confirmed, confirms, page, night_id))
    return RunEntry(data["token"], data["run_id"], data["started"], tuple(points),
                    None if night is None else NightMark(night[0], night[1], night[2], tuple(night[3])))
