"""Writing a run into the results store (db.py reads it back): every row of a run in one `BEGIN IMMEDIATE`
transaction, replacing any earlier record of its run id.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from orchestrator.base.cache import finite_json
from orchestrator.base.codec import encode
from orchestrator.base.errors import Blame
from orchestrator.base.stats import median, percentile
from orchestrator.results.model import DeviceResult, ModelResult, ProcessRun
from orchestrator.store.footprint_rows import footprint_columns
from orchestrator.store.rows import META_FIELDS, STAT_FIELDS

if TYPE_CHECKING:  # numpy loads only when recording
    import numpy as np

    from orchestrator.store.ingest import JobRecord


def write_job(conn: sqlite3.Connection, record: JobRecord) -> None:
    """The run's rows in one transaction, replacing an earlier record of its id."""
    job = record.job
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DELETE FROM runs WHERE run_id = ?", (job.run_id,))
        conn.execute(
            "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (job.run_id, job.started, _timestamp(job.started), job.finished, job.status.value, str(record.run_dir),
             time.strftime("%Y-%m-%dT%H:%M:%S%z"), job.schema_version, job.host.get("hostname"),
             job.versions.get("etfarm"), job.versions.get("executorch"), job.versions.get("torch"),
             json_text(job.config.to_dict()), json_text(job.versions), json_text(job.host)))
        conn.executemany(
            "INSERT INTO models (run_id, ordinal, name, spec, backend, export_key, content_hash, git_commit, pte, "
            "etrecord, inputs, reference_outputs, numerics_reference, recipe, model_json) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(job.run_id, k, m.name, m.spec, m.backend, m.key, m.content_hash, m.git_commit, m.pte, m.etrecord,
              m.inputs, m.reference_outputs, m.numerics_reference, m.recipe.text if m.recipe else None,
              json_text(m.to_dict())) for k, m in enumerate(job.models)])
        for k, device in enumerate(job.devices):
            _insert_device(conn, job.run_id, k, device, record)
        conn.executemany(
            "INSERT INTO events (run_id, device, model, event_block, event_index, event_name, is_delegated_op, "
            f"{', '.join(META_FIELDS)}, samples, {', '.join(STAT_FIELDS)}, samples_ms, run_counts) "
            f"VALUES ({', '.join('?' * (10 + len(META_FIELDS) + len(STAT_FIELDS)))})",
            [(job.run_id, e.device, e.model, e.event_block, e.event_index, e.event_name,
              None if e.is_delegated_op is None else int(e.is_delegated_op), *(e.meta.get(f) for f in META_FIELDS),
              e.samples, *(e.stats.get(f) for f in STAT_FIELDS), _blob(e.samples_ms, "<f8"),
              _blob(e.run_counts, "<i8")) for e in record.events])
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite ends the transaction itself on a full disk: keep the real cause
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


def _insert_device(conn: sqlite3.Connection, run_id: str, ordinal: int, device: DeviceResult, record: JobRecord) -> None:
    conn.execute("INSERT INTO devices (run_id, ordinal, name, transport, target, status, error, blame, runner_key, "
                 "facts_json, controls_json, emulated) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                 (run_id, ordinal, device.name, device.transport, device.target, device.status.value, device.error,
                  _enum(device.blame), device.runner_key, json_text(device.facts.to_json()), json_text(device.controls),
                  int(device.emulated)))
    for k, model in enumerate(device.models):
        p90 = percentile(model.reported_execute_ms, 90)
        conn.execute(
            "INSERT INTO results (run_id, device, ordinal, model, status, e2e_p50_ms, e2e_p90_ms, untraced_p50_ms, "
            "load_p50_ms, sample_runs_json, peak_rss_bytes, uj_per_inference, result_json) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, device.name, k, model.name, model.status.value, median(model.reported_execute_ms), p90,
             median(model.untraced_execute_ms), median(model.warm_load_ms),  # the report's load p50: warm runs
             json_text(list(record.sample_runs.get((device.name, model.name), ()))), *footprint_columns(model),
             json_text(result_json(model))))
        conn.executemany(
            "INSERT INTO process_runs (run_id, device, model, ordinal, label, traced, execute_ms, run_json) "
            "VALUES (?,?,?,?,?,?,?,?)",
            [(run_id, device.name, model.name, j, r.label, int(r.traced), _blob(r.execute_ms, "<f8"), json_text(run_json(r)))
             for j, r in enumerate(model.runs)])


def result_json(model: ModelResult) -> dict[str, Any]:
    """What a results row keeps of a model result: its codec JSON but its process runs (rows of their own, below)
    and the summary (derived, recomputed on reading)."""
    return {k: v for k, v in encode(model).items() if k not in ("runs", "summary")}


def run_json(run: ProcessRun) -> dict[str, Any]:
    """What a process_runs row keeps of a run beside its samples: its codec JSON but `execute_ms` (the BLOB)."""
    return {k: v for k, v in encode(run).items() if k != "execute_ms"}


def json_text(value: Mapping[str, Any] | Iterable[Any]) -> str:
    """Free-form JSON text: a non-finite number is null (cache.py `finite_json`), never a bare NaN."""
    return json.dumps(finite_json(value if isinstance(value, (dict, list)) else dict(value)),  # type: ignore[arg-type]
                      allow_nan=False)


def _blob(values: np.ndarray | tuple[float, ...] | None, dtype: str) -> bytes | None:
    import numpy as np

    return None if values is None else np.ascontiguousarray(values, dtype=dtype).tobytes()


def _enum(value: Blame | None) -> str | None:
    return value.value if value is not None else None


def _timestamp(started: str) -> float:
    """Seconds since the epoch of a manifest time (`%Y-%m-%dT%H:%M:%S%z`, or any ISO 8601)."""
    try:
        return datetime.strptime(started, "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        try:
            return datetime.fromisoformat(started).timestamp()
        except ValueError:
            return 0.0
