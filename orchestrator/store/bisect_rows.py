"""The steps `etfarm bisect` measured, kept so that `etfarm bisect --resume` (and a later bisect of the same
programs) does not measure them again.

A step is keyed by what decides its outcome: GOOD's program and the candidate's (sha256 of each .pte), and the
setup it was measured with (devices, options, verdict settings, as one canonical string the caller builds).
Its value is the step as bisect reports it (a JSON object), so the row needs no migration when a step gains
a field.

    Store.bisect_steps().record(good_pte, pte, setup, step)      insert or replace
    Store.bisect_steps().find(good_pte, pte, setup) -> dict | None
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping
from typing import Any


class BisectSteps:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def record(self, good_pte: str, pte: str, setup: str, step: Mapping[str, Any]) -> None:
        self._conn.execute("INSERT OR REPLACE INTO bisect_steps (good_pte, pte, setup, step_json, recorded_ts) "
                           "VALUES (?, ?, ?, ?, ?)", (good_pte, pte, setup, json.dumps(dict(step)), time.time()))

    def find(self, good_pte: str, pte: str, setup: str) -> dict[str, Any] | None:
        row = self._conn.execute("SELECT step_json FROM bisect_steps WHERE good_pte = ? AND pte = ? AND setup = ?",
                                 (good_pte, pte, setup)).fetchone()
        if row is None:
            return None
        try:
            found = json.loads(row[0])
        except ValueError:  # a damaged row is measured again, never trusted
            return None
        return found if isinstance(found, dict) else None
