"""The store meets its host's trouble: a writer that holds it too long, a read-only copy, a device as a path.
Real SQLite files and real locks (a second connection holding a write transaction); the busy timeout
is shortened for the test, the only thing not as in production."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from orchestrator.base.cache import finite_json
from orchestrator.base.errors import UsageError
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from orchestrator.store.db import Store
from orchestrator.store.ingest import read_run
from orchestrator.store.write import json_text
from tests.unit.store.rundirs import make_run_dir


def test_a_store_held_past_the_busy_timeout_is_one_usage_line(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    open_store(path).close()  # created and migrated
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        conn = sqlite3.connect(path, timeout=0.1, isolation_level=None)
        record = read_run(RunRecord(make_run_dir(tmp_path, "20260101-000000-aaaa", "2026-01-01T00:00:00+0000")))
        with pytest.raises(UsageError, match="another process held it past the 30 s busy timeout"):
            Store(path, conn).record_job(record)
        assert not conn.in_transaction  # rolled back, nothing half written
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_device_is_no_store(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not a regular file"):
        open_store(Path("/dev/zero"))


def test_free_form_json_holds_no_nan() -> None:
    text = json_text({"temp": math.nan, "nested": [math.inf, {"x": -math.inf}], "ok": 1.5})
    assert text == '{"temp": null, "nested": [null, {"x": null}], "ok": 1.5}'
    assert finite_json((1.0, math.nan)) == [1.0, None]
