"""Schema migrations keyed by PRAGMA user_version: applied in one transaction, newer refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from orchestrator.base.errors import DataError
from orchestrator.store.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    connect,
    migrate,
    user_version,
)


def _v1_database(path: Path) -> None:
    """A store as etfarm wrote it at schema version 1, with one run in it."""
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, MIGRATIONS[:1])
    conn.execute("INSERT INTO runs (run_id, started, started_ts, status, recorded, schema_version, config_json, "
                 "versions_json, host_json) VALUES ('old', '2026-01-01T00:00:00+0000', 0, 'ok', 'x', 1, '{}', '{}', '{}')")
    conn.close()


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def test_fresh_store_is_at_the_newest_version_with_wal_and_strict_tables(tmp_path: Path) -> None:
    conn = connect(tmp_path / "deep" / "results.db")
    assert user_version(conn) == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    sql = [row[0] for row in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table'")]
    assert sql and all(s.rstrip().endswith("STRICT") for s in sql)
    with pytest.raises(sqlite3.IntegrityError):  # STRICT: a text where a number belongs is refused
        conn.execute("INSERT INTO runs (run_id, started, started_ts, status, recorded, schema_version, config_json, "
                     "versions_json, host_json) VALUES ('r', 's', 'not a number', 'ok', 'x', 1, '{}', '{}', '{}')")


def test_v1_store_is_migrated_keeping_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    _v1_database(path)
    conn = connect(path)
    assert user_version(conn) == SCHEMA_VERSION
    assert conn.execute("SELECT run_id FROM runs").fetchall() == [("old",)]
    assert {"source_line", "delegate_covers"} <= set(_columns(conn, "events"))
    indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "runs_by_time" in indexes


def test_a_failing_migration_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    _v1_database(path)
    broken = (*MIGRATIONS[:2], "CREATE TABLE later (x INTEGER) STRICT;\nTHIS IS NOT SQL;")
    with pytest.raises(DataError, match="not a usable etfarm store"):
        connect(path, broken)
    conn = sqlite3.connect(path)
    assert user_version(conn) == 1  # v2 was applied inside the same transaction: rolled back too
    assert "source_line" not in _columns(conn, "events")
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'later'").fetchone()[0] == 0


def test_a_store_from_a_newer_etfarm_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    conn = connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(DataError, match="newer than this etfarm reads"):
        connect(path)


def test_a_file_that_is_not_sqlite_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    path.write_text("hello, not a database" * 100)
    with pytest.raises(DataError, match="not a usable etfarm store"):
        connect(path)
