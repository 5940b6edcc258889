"""The results store: record run directories, read back the results model, history and raw samples.

`Store.record(run)` writes a whole run (its `RunRecord`) in one `BEGIN IMMEDIATE` transaction, replacing any
earlier record of the same run id (a resumed run re-recorded), so concurrent writers serialise
on SQLite's lock (WAL + busy_timeout) and a reader never sees half a run. `Store.job(run_id)`
rebuilds the `results.Job` from the codec's JSON each row keeps (a model result in `results.result_json`, its
process runs in `process_runs.run_json` beside their samples): `job.to_dict()` equals the manifest's.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from device_agents.facts import DeviceFacts
from orchestrator.base.errors import Blame, UsageError
from orchestrator.results.model import (
    DeviceResult,
    DeviceStatus,
    Job,
    JobConfig,
    JobStatus,
    ModelArtifacts,
    ModelResult,
)
from orchestrator.run.configuration import model_settings
from orchestrator.store.bisect_rows import BisectSteps
from orchestrator.store.footprint_rows import footprint_points
from orchestrator.store.history import HistoryPoint
from orchestrator.store.llm_points import memory_and_llm
from orchestrator.store.rows import META_FIELDS, STAT_FIELDS, EventRow
from orchestrator.store.series_rows import SeriesRows, llm_results
from orchestrator.store.write import write_job

if TYPE_CHECKING:  # numpy and the run reader load only when recording or reading samples: `history` starts fast
    import numpy as np

    from orchestrator.results.record import RunRecord
    from orchestrator.store.ingest import JobRecord

EventKey = tuple[str, int]  # (event_block, event_index)
# SQLite's answers that are the host's trouble, not etfarm's: what to say (None: SQLite's own words).
_HOST_TROUBLE = {sqlite3.SQLITE_FULL: "its disk is full", sqlite3.SQLITE_IOERR: None, sqlite3.SQLITE_READONLY: None,
                 sqlite3.SQLITE_CANTOPEN: None,
                 sqlite3.SQLITE_BUSY: "another process held it past the 30 s busy timeout (try again later)",
                 sqlite3.SQLITE_LOCKED: "another process held it past the 30 s busy timeout (try again later)"}


@dataclass(frozen=True)
class StoredJob:
    """One stored run as `history` lists it: when, how it ended, and its (device, model) points."""

    run_id: str
    started: str
    finished: str | None
    status: str
    run_dir: Path | None
    models: tuple[str, ...]
    devices: tuple[str, ...]
    points: tuple[HistoryPoint, ...]  # device x model, in job order


class Store:
    """An open results store (see `open_store`). Usable as a context manager."""

    def __init__(self, path: Path, conn: sqlite3.Connection, read_only: bool = False) -> None:
        self.path = path
        self._conn = conn
        self.read_only = read_only  # opened where this process cannot write (store/location.py)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- writing -------------------------------------------------------------------

    def record(self, run: RunRecord) -> str:
        """Record (or re-record) a finished run from its directory; returns its run id."""
        # numpy (ETDumps) only when recording: `etfarm history` opens the store without it
        from orchestrator.store.ingest import read_run

        return self.record_job(read_run(run))

    def record_job(self, record: JobRecord) -> str:
        """Record the run in one transaction. A full disk or a read-only store is a UsageError naming the store
        (nothing of the run is recorded: the transaction is rolled back, or SQLite has already done so)."""
        job = record.job
        if self.read_only:
            raise UsageError(f"the results store {self.path} is read-only here; run {job.run_id} was not recorded")
        try:
            write_job(self._conn, record)
        except sqlite3.OperationalError as exc:
            code = exc.sqlite_errorcode & 0xFF  # the primary code of an extended one (SQLITE_IOERR_WRITE)
            if code not in _HOST_TROUBLE:
                raise
            what = _HOST_TROUBLE[code] or str(exc)
            raise UsageError(f"the results store {self.path}: {what}; run {job.run_id} was not recorded") from None
        return job.run_id

    def has_job(self, run_id: str) -> bool:
        return self._conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None

    def job(self, run_id: str, samples: bool = True, keys_only: bool = False) -> Job:
        """The stored run as the results model (equal to load_manifest of its run directory). Without `samples`
        its process runs carry no execute samples: what a run's configuration needs, read without numpy;
        `keys_only`: a device's results only its LLMs', with their generations: all likeness.SeriesKey reads
        (series_rows.llm_results)."""
        conn = self._conn
        run = conn.execute("SELECT started, finished, status, schema_version, config_json, versions_json, host_json "
                           "FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if run is None:
            raise UsageError(f"{self.path}: no stored run {run_id!r} (see `etfarm history`)")
        started, finished, status, schema_version, config, versions, host = run
        models = tuple(
            ModelArtifacts.from_dict(json.loads(r[11])) if r[11] is not None else
            ModelArtifacts(name=r[0], spec=r[1], backend=r[2], key=r[3], content_hash=r[4], git_commit=r[5], pte=r[6],
                           etrecord=r[7], inputs=r[8], reference_outputs=r[9], numerics_reference=r[10])
            for r in conn.execute("SELECT name, spec, backend, export_key, content_hash, git_commit, pte, etrecord, "
                                  "inputs, reference_outputs, numerics_reference, model_json FROM models WHERE run_id = ? "
                                  "ORDER BY ordinal", (run_id,)))
        devices = tuple(
            DeviceResult(name=name, transport=transport, target=target, status=DeviceStatus(dstatus), error=error,
                         blame=_blame(blame), facts=DeviceFacts.from_json(json.loads(facts)), runner_key=runner_key,
                         controls=json.loads(controls) if controls else {}, emulated=bool(emulated),
                         models=llm_results(conn, run_id, name) if keys_only
                         else self._model_results(run_id, name, samples))
            for name, transport, target, dstatus, error, blame, runner_key, facts, controls, emulated in conn.execute(
                "SELECT name, transport, target, status, error, blame, runner_key, facts_json, controls_json, emulated "
                "FROM devices "
                "WHERE run_id = ? ORDER BY ordinal", (run_id,)))
        return Job(run_id=run_id, status=JobStatus(status), started=started, finished=finished,
                   config=JobConfig.from_dict(json.loads(config)), versions=json.loads(versions),
                   host=json.loads(host), models=models, devices=devices, schema_version=schema_version)

    def _model_results(self, run_id: str, device: str, samples: bool = True) -> tuple[ModelResult, ...]:
        """The device's model results: each row's codec JSON (write.result_json) with its process runs' (run_json)
        and, with `samples`, their execute samples."""
        runs: dict[str, list[dict[str, Any]]] = {}
        for model, blob, whole in self._conn.execute(
                "SELECT model, execute_ms, run_json FROM process_runs WHERE run_id = ? AND device = ? "
                "ORDER BY ordinal", (run_id, device)):
            runs.setdefault(model, []).append({**json.loads(whole), "execute_ms": _floats(blob).tolist() if samples else []})
        return tuple(
            ModelResult.from_dict(model, {**json.loads(whole), "runs": runs.get(model, [])})
            for model, whole in self._conn.execute(
                "SELECT model, result_json FROM results WHERE run_id = ? AND device = ? ORDER BY ordinal",
                (run_id, device)))

    def run_medians(self, device: str, model: str, limit: int) -> list[tuple[str, tuple[float, ...]]]:
        """The newest `limit` stored jobs of `model` on `device`: (run id, each traced process run's
        median execution, ms), for what they show of the device's speed states (verdicts/device_states.py)."""
        import numpy as np

        runs: dict[str, list[float]] = {}
        for run_id, blob in self._conn.execute(
                "SELECT pr.run_id, pr.execute_ms FROM process_runs pr WHERE pr.device = ? AND pr.model = ? "
                "AND pr.traced = 1 AND pr.run_id IN (SELECT r.run_id FROM runs r JOIN process_runs p "
                "ON p.run_id = r.run_id AND p.device = ? AND p.model = ? GROUP BY r.run_id "
                "ORDER BY r.started_ts DESC, r.run_id DESC LIMIT ?) ORDER BY pr.run_id, pr.ordinal",
                (device, model, device, model, limit)):
            samples = _floats(blob)
            if samples.size:
                runs.setdefault(run_id, []).append(float(np.median(samples)))
        return [(run_id, tuple(medians)) for run_id, medians in runs.items()]

    def run_dir(self, run_id: str) -> Path | None:
        """Where the run directory was when recorded, if it is still there."""
        row = self._conn.execute("SELECT run_dir FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None or row[0] is None:
            return None
        path = Path(row[0])
        return path if path.is_dir() else None

    # ---- events and raw samples ------------------------------------------------------------

    def events(self, run_id: str, device: str, model: str) -> list[EventRow]:
        """Every stored event of (device, model) in the run, with statistics and raw samples."""
        rows = self._conn.execute(
            f"SELECT event_block, event_index, event_name, is_delegated_op, {', '.join(META_FIELDS)}, samples, "
            f"{', '.join(STAT_FIELDS)}, samples_ms, run_counts FROM events "
            "WHERE run_id = ? AND device = ? AND model = ? ORDER BY rowid", (run_id, device, model))
        out = []
        nmeta, nstat = len(META_FIELDS), len(STAT_FIELDS)
        for row in rows:
            meta = dict(zip(META_FIELDS, row[4:4 + nmeta], strict=False))
            stats = dict(zip(STAT_FIELDS, row[5 + nmeta:5 + nmeta + nstat], strict=False))
            samples_blob, counts_blob = row[-2], row[-1]
            out.append(EventRow(device=device, model=model, event_block=row[0], event_index=row[1], event_name=row[2],
                                samples=row[4 + nmeta], stats=stats,
                                is_delegated_op=None if row[3] is None else bool(row[3]), meta=meta,
                                samples_ms=_floats(samples_blob) if samples_blob is not None else None,
                                run_counts=_ints(counts_blob) if counts_blob is not None else None))
        return out

    def sample_runs(self, run_id: str, device: str, model: str) -> tuple[str, ...]:
        row = self._conn.execute("SELECT sample_runs_json FROM results WHERE run_id = ? AND device = ? AND model = ?",
                                 (run_id, device, model)).fetchone()
        return tuple(json.loads(row[0])) if row else ()

    def event_samples(self, run_id: str, device: str, model: str) -> dict[EventKey, dict[str, np.ndarray]]:
        """Per event (block, index): its raw samples (ms) per process run label, in run order."""
        labels = self.sample_runs(run_id, device, model)
        return {(e.event_block, e.event_index): e.per_run(labels) for e in self.events(run_id, device, model)
                if e.samples_ms is not None}

    def execute_samples(self, run_id: str, device: str, model: str, traced: bool = True) -> dict[str, np.ndarray]:
        """Wall clock per execution (ms) per process run label, traced or untraced runs."""
        return {label: _floats(blob) for label, blob in self._conn.execute(
            "SELECT label, execute_ms FROM process_runs WHERE run_id = ? AND device = ? AND model = ? AND traced = ? "
            "ORDER BY ordinal", (run_id, device, model, int(traced)))}

    # ---- history -------------------------------------------------------------------------

    def series_rows(self) -> SeriesRows:
        """What `etfarm publish` reads: each run's stamp, each (device, model) of a run as figures (series_rows.py)."""
        return SeriesRows(self._conn)

    def bisect_steps(self) -> BisectSteps:
        """The steps `etfarm bisect` measured (bisect_rows.py), for --resume."""
        return BisectSteps(self._conn)

    def jobs(self, model: str | None = None, device: str | None = None, since: datetime | str | None = None,
             limit: int | None = None) -> list[StoredJob]:
        """Stored runs, newest first; `model`/`device` keep runs that had them, `since` a start time."""
        where, args = [], []
        if model is not None:
            where.append("EXISTS (SELECT 1 FROM models m WHERE m.run_id = r.run_id AND m.name = ?)")
            args.append(model)
        if device is not None:
            where.append("EXISTS (SELECT 1 FROM devices d WHERE d.run_id = r.run_id AND d.name = ?)")
            args.append(device)
        if since is not None:
            where.append("r.started_ts >= ?")
            args.append(_since_ts(since))
        sql = ("SELECT run_id, started, finished, status, run_dir FROM runs r"
               + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY started_ts DESC, run_id DESC")
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        out = []
        for run_id, started, finished, status, run_dir in self._conn.execute(sql, args).fetchall():
            points = self._points(run_id)
            models = tuple(r[0] for r in self._conn.execute(
                "SELECT name FROM models WHERE run_id = ? ORDER BY ordinal", (run_id,)))
            devices = tuple(r[0] for r in self._conn.execute(
                "SELECT name FROM devices WHERE run_id = ? ORDER BY ordinal", (run_id,)))
            out.append(StoredJob(run_id, started, finished, status, Path(run_dir) if run_dir else None, models, devices,
                                 points))
        return out

    def history_points(self, model: str, devices: Sequence[str] | None = None, limit: int = 10,
                       before_run: str | None = None) -> list[HistoryPoint]:
        """The model's points in its last `limit` runs (on `devices`, older than `before_run`), newest first.

        Every device of such a run gets a point, a failed one too (status says so, p50 is None)."""
        where, args = ["EXISTS (SELECT 1 FROM models m WHERE m.run_id = r.run_id AND m.name = ?)"], [model]
        if devices:
            where.append(f"EXISTS (SELECT 1 FROM devices d WHERE d.run_id = r.run_id AND d.name IN "
                         f"({', '.join('?' * len(devices))}))")
            args.extend(devices)
        if before_run is not None:
            anchor = self._conn.execute("SELECT started_ts FROM runs WHERE run_id = ?", (before_run,)).fetchone()
            if anchor is None:
                raise UsageError(f"{self.path}: no stored run {before_run!r}")
            where.append("(r.started_ts < ? OR (r.started_ts = ? AND r.run_id < ?))")
            args.extend([anchor[0], anchor[0], before_run])
        run_ids = [r[0] for r in self._conn.execute(
            f"SELECT run_id FROM runs r WHERE {' AND '.join(where)} ORDER BY started_ts DESC, run_id DESC LIMIT ?",
            [*args, int(limit)])]
        wanted = set(devices) if devices else None
        return [p for run_id in run_ids for p in self._points(run_id)
                if p.model == model and (wanted is None or p.device in wanted)]

    def _points(self, run_id: str) -> tuple[HistoryPoint, ...]:
        """Every device x model of the run; a device that failed before a model ran still gets a point."""
        rows = self._conn.execute(
            "SELECT r.started, d.name, m.name, d.status, res.status, res.e2e_p50_ms, res.e2e_p90_ms, m.git_commit, "
            "m.backend, (SELECT COUNT(*) FROM process_runs pr WHERE pr.run_id = r.run_id AND pr.device = d.name "
            "AND pr.model = m.name AND pr.traced = 1 AND json_extract(pr.run_json, '$.flag') IS NOT NULL) "
            "FROM runs r JOIN devices d ON d.run_id = r.run_id JOIN models m ON m.run_id = r.run_id "
            "LEFT JOIN results res ON res.run_id = r.run_id AND res.device = d.name AND res.model = m.name "
            "WHERE r.run_id = ? ORDER BY d.ordinal, m.ordinal", (run_id,))
        extra = memory_and_llm(self._conn, run_id)  # PSS, and an LLM's TTFT and decode rate
        for key, figures in footprint_points(self._conn, run_id).items():  # peak RSS by owner, energy (v6)
            extra.setdefault(key, {}).update(figures)
        job = self.job(run_id, samples=False)  # its configuration per (device, model): a series never mixes them
        return tuple(
            HistoryPoint(run_id=run_id, started=started, device=device, model=model,
                         status=dstatus if dstatus != DeviceStatus.OK.value or mstatus is None else mstatus,
                         e2e_p50_ms=p50, e2e_p90_ms=p90, git_commit=commit, backend=backend or "", flagged=flagged,
                         settings=model_settings(job, model, device), **extra.get((device, model), {}))
            for started, device, model, dstatus, mstatus, p50, p90, commit, backend, flagged in rows)


# ---- helpers ----------------------------------------------------------------------------------




def _floats(blob: bytes) -> np.ndarray:
    import numpy as np

    return np.frombuffer(blob, dtype="<f8")


def _ints(blob: bytes) -> np.ndarray:
    import numpy as np

    return np.frombuffer(blob, dtype="<i8")


def _blame(value: str | None) -> Blame | None:
    return Blame(value) if value is not None else None


def _since_ts(since: datetime | str) -> float:
    if isinstance(since, datetime):
        return since.timestamp()
    try:
        return datetime.fromisoformat(since).timestamp()  # naive: local time
    except ValueError:
        raise UsageError(f"--since: {since!r} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM)") from None
