"""A results store as etfarm wrote it at schema version 8 (before results rows kept the codec's JSON of a model
result), kept as SQL text (fixtures/store_v8.sql) beside the manifest of the run it holds (fixtures/store_v8_manifest.json).

Both were written by `python -m tests.unit.store.old_store` at 5689d1e, the last commit with the v8 writer; the
test of the v9 migration loads the SQL into a real SQLite file and migrates it."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DUMP, MANIFEST = FIXTURES / "store_v8.sql", FIXTURES / "store_v8_manifest.json"
RUN_ID = "2026-01-02T03-04-05-v8"


def load(path: Path) -> None:
    """The v8 store, as a SQLite file at `path`."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(DUMP.read_text(encoding="utf-8"))
    conn.close()


def main() -> None:
    from orchestrator.store import open_store
    from tests.unit.store.rundirs import make_run_dir

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = make_run_dir(Path(tmp), RUN_ID, "2026-01-02T03:04:05+0000", failed=("rpi5",), devices=("local", "rpi5"))
        with open_store(Path(tmp) / "s.db") as store:
            store.record(run_dir)
            conn = store._conn
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            lines = [line for line in conn.iterdump()]
        FIXTURES.mkdir(exist_ok=True)
        DUMP.write_text("\n".join([*lines, f"PRAGMA user_version = {version};"]) + "\n", encoding="utf-8")
        MANIFEST.write_text(json.dumps(json.loads((run_dir / "manifest.json").read_text()), indent=1) + "\n")


if __name__ == "__main__":
    main()
