"""Schema v9: results rows keep the codec's JSON of a model result (process runs theirs) plus only the queried columns;
a v8 store (as etfarm wrote it before: fixtures/store_v8.sql) is migrated and reads back the same results."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from orchestrator.base.errors import DataError
from orchestrator.results.model import Job
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from orchestrator.store.schema import SCHEMA_VERSION, user_version
from tests.unit.store import old_store
from tests.unit.store.rundirs import make_run_dir


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _manifest() -> Job:
    return Job.from_dict(json.loads(old_store.MANIFEST.read_text(encoding="utf-8")))


def test_a_v8_store_is_migrated_and_reads_back_the_same_results(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    old_store.load(path)
    with sqlite3.connect(path) as conn:
        assert user_version(conn) == 8 and "result_json" not in _columns(conn, "results")
    with open_store(path) as store:
        assert user_version(store._conn) == SCHEMA_VERSION
        job = store.job(old_store.RUN_ID)
        assert job.to_dict() == _manifest().to_dict()
        assert [p.e2e_p50_ms for p in store.history_points("mlp")] == [0.1115, None]  # queried columns kept
        columns = _columns(store._conn, "results")
    assert {"result_json", "status", "e2e_p50_ms", "peak_rss_bytes"} <= columns
    assert not {"error", "verification_detail", "accuracy_json", "memory_json"} & columns


def test_process_runs_stored_before_v3_get_their_json_from_the_old_columns(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    old_store.load(path)
    with sqlite3.connect(path) as conn:  # as a v2 store held them: no run_json, the typed columns only
        conn.execute("UPDATE process_runs SET run_json = NULL")
    with open_store(path) as store:
        runs = store.job(old_store.RUN_ID).devices[0].models[0].runs
        assert not {"load_ms", "device_state_json", "runner_json"} & _columns(store._conn, "process_runs")
    expected = _manifest().devices[0].models[0].runs
    assert [(r.label, r.traced, r.load_ms, r.device_state, r.artifacts, r.runner) for r in runs] == [
        (r.label, r.traced, r.load_ms, r.device_state, r.artifacts, r.runner) for r in expected]
    assert [r.execute_ms for r in runs] == [r.execute_ms for r in expected]


def test_a_v8_row_it_cannot_read_is_one_error_and_the_store_stays_at_v8(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    old_store.load(path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE results SET verification = 'maybe'")
    with pytest.raises(DataError, match=r"results.db: cannot migrate to schema version 9: 'maybe' is not a valid"):
        open_store(path)
    with sqlite3.connect(path) as conn:
        assert user_version(conn) == 8 and "result_json" not in _columns(conn, "results")


def test_a_v9_row_is_the_codec_json_of_the_model_result_without_its_runs(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, "r9", "2026-01-03T00:00:00+0000")
    with open_store(tmp_path / "s.db") as store:
        store.record(RunRecord(run_dir))
        (whole,) = store._conn.execute("SELECT result_json FROM results WHERE device = 'local'").fetchone()
        job = store.job("r9")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    written = manifest["devices"]["local"]["models"]["mlp"]
    assert json.loads(whole) == {k: v for k, v in written.items() if k not in ("runs", "summary")}
    assert job.to_dict() == manifest
