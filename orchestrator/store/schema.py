"""The store's SQLite schema and its migrations, keyed by `PRAGMA user_version`.

`MIGRATIONS[k]` takes a database from version k to k + 1. `connect` opens a file (WAL,
`busy_timeout`, foreign keys on) and applies every missing migration in ONE `BEGIN IMMEDIATE`
transaction that re-reads the version once it holds the write lock, so two processes opening
an old database at once migrate it once, and a failing migration leaves it as it was. A
database written by a newer etfarm is refused, never half understood.

Every table is STRICT. Free-form mappings of the results model (device facts, the job's settings)
are JSON text, and so are a model result and a process run whole, as the codec writes them (v9);
everything queried is a typed column; raw samples are little-endian float64 BLOBs (one per event,
one per process run). A migration is SQL, or a step in Python where rows must be rewritten (v9).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from orchestrator.base.errors import DataError

BUSY_TIMEOUT_MS = 30_000

_V1 = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    started TEXT NOT NULL,              -- ISO 8601 as in the manifest
    started_ts REAL NOT NULL,           -- the same, seconds since the epoch (ordering, --since)
    finished TEXT,
    status TEXT NOT NULL,
    run_dir TEXT,                       -- where the run directory was when recorded
    recorded TEXT NOT NULL,
    schema_version INTEGER NOT NULL,    -- of the manifest
    hostname TEXT,
    etfarm_version TEXT,
    executorch_version TEXT,
    torch_version TEXT,
    config_json TEXT NOT NULL,          -- JobConfig.to_dict()
    versions_json TEXT NOT NULL,
    host_json TEXT NOT NULL
) STRICT;

CREATE TABLE models (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    name TEXT NOT NULL,
    spec TEXT NOT NULL,
    backend TEXT NOT NULL,
    export_key TEXT NOT NULL,
    content_hash TEXT,
    git_commit TEXT,
    pte TEXT,
    etrecord TEXT,
    inputs TEXT,
    reference_outputs TEXT,
    PRIMARY KEY (run_id, name)
) STRICT;

CREATE TABLE devices (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    name TEXT NOT NULL,
    transport TEXT NOT NULL,
    target TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    blame TEXT,
    runner_key TEXT,
    facts_json TEXT NOT NULL,
    PRIMARY KEY (run_id, name)
) STRICT;

CREATE TABLE results (
    run_id TEXT NOT NULL,
    device TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    blame TEXT,
    verification TEXT,                  -- pass / fail / skipped; NULL when never verified
    verification_detail TEXT,
    verification_max_abs_diff REAL,
    verification_runs_checked INTEGER,
    e2e_p50_ms REAL,                    -- traced runs' wall clock, all samples
    e2e_p90_ms REAL,
    untraced_p50_ms REAL,
    load_p50_ms REAL,
    sample_runs_json TEXT NOT NULL,     -- labels of the ETDumps behind events.run_counts, in order
    PRIMARY KEY (run_id, device, model),
    FOREIGN KEY (run_id, device) REFERENCES devices(run_id, name) ON DELETE CASCADE
) STRICT;

CREATE TABLE process_runs (
    run_id TEXT NOT NULL,
    device TEXT NOT NULL,
    model TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    label TEXT NOT NULL,
    traced INTEGER NOT NULL,
    execute_ms BLOB NOT NULL,           -- float64 per measured execution
    load_ms REAL,
    program_load_ms REAL,
    device_state_json TEXT NOT NULL,
    artifacts_json TEXT NOT NULL,
    runner_json TEXT NOT NULL,
    PRIMARY KEY (run_id, device, model, label),
    FOREIGN KEY (run_id, device, model) REFERENCES results(run_id, device, model) ON DELETE CASCADE
) STRICT;

CREATE TABLE events (
    run_id TEXT NOT NULL,
    device TEXT NOT NULL,
    model TEXT NOT NULL,
    event_block TEXT NOT NULL,
    event_index INTEGER NOT NULL,
    event_name TEXT NOT NULL,
    is_delegated_op INTEGER,
    delegate_debug_identifier TEXT,
    op_types TEXT,
    delegate_backend_name TEXT,
    module_path TEXT,
    samples INTEGER NOT NULL,
    min_ms REAL, p10_ms REAL, p50_ms REAL, p90_ms REAL, avg_ms REAL, max_ms REAL, std_ms REAL,
    samples_ms BLOB,                    -- float64, runs concatenated in sample_runs order; NULL if only stats.csv was left
    run_counts BLOB,                    -- int64 samples per run, aligned with results.sample_runs_json
    PRIMARY KEY (run_id, device, model, event_block, event_index),
    FOREIGN KEY (run_id, device, model) REFERENCES results(run_id, device, model) ON DELETE CASCADE
) STRICT;
"""

# v2: where each op is in the user's model (source line, what a delegate call covers), and the
# indexes `history` filters on.
_V2 = """
ALTER TABLE events ADD COLUMN source_line TEXT;
ALTER TABLE events ADD COLUMN delegate_covers TEXT;
CREATE INDEX runs_by_time ON runs(started_ts DESC);
CREATE INDEX results_by_model ON results(model, device);
"""

# v3: where a model's AOT intermediate outputs are (for `etfarm numerics`), and each process run
# whole as the results model writes it (memory, calibration, cold load, flags, ...), so fields the
# results model gains later round-trip without a migration of their own. NULL in older rows.
_V3 = """
ALTER TABLE models ADD COLUMN numerics_reference TEXT;
ALTER TABLE process_runs ADD COLUMN run_json TEXT;
ALTER TABLE devices ADD COLUMN controls_json TEXT;
"""

# v4: each XNNPACK kernel event's mapping to the user's model (profiles/kernel_map.py): `mapped` (its
# module_path and source_line are then its own) or `unmapped`, and the note (fused ops) or the reason.
_V4 = """
ALTER TABLE events ADD COLUMN kernel_mapping TEXT;
ALTER TABLE events ADD COLUMN kernel_note TEXT;
"""

# v5: export recipes (docs/how-to/quantized.md): a model's recipe (queried: a series' configuration) and the
# model whole as the results model writes it (calibration, eager references; later fields round-trip, as
# v3's run_json), and the accuracy a (device, model) paid against the fp32 eager model. NULL in older rows.
_V5 = """
ALTER TABLE models ADD COLUMN recipe TEXT;
ALTER TABLE models ADD COLUMN model_json TEXT;
ALTER TABLE results ADD COLUMN accuracy_json TEXT;
"""

# v6: the steps `etfarm bisect` measured (store/bisect_rows.py), for --resume: keyed by both programs' sha256
# and the setup they were measured with.
_V6 = """
CREATE TABLE bisect_steps (
    good_pte TEXT NOT NULL,
    pte TEXT NOT NULL,
    setup TEXT NOT NULL,
    step_json TEXT NOT NULL,
    recorded_ts REAL NOT NULL,
    PRIMARY KEY (good_pte, pte, setup)
) STRICT;
"""

# v7: a device that is an emulation (`etfarm devices emulate`, inventory `emulated: true`): pages mark its timings.
_V7 = """
ALTER TABLE devices ADD COLUMN emulated INTEGER NOT NULL DEFAULT 0;
"""

# v8 (issue 39): a (device, model)'s memory by owner (ModelMemory) and its energy per inference (ModelEnergy) as the
# results model writes them, and the two figures series and verdicts query: peak RSS (bytes) and uJ per inference.
_V8 = """
ALTER TABLE results ADD COLUMN memory_json TEXT;
ALTER TABLE results ADD COLUMN energy_json TEXT;
ALTER TABLE results ADD COLUMN peak_rss_bytes INTEGER;
ALTER TABLE results ADD COLUMN uj_per_inference REAL;
"""



def _v9(conn: sqlite3.Connection) -> None:
    """v9: results and process runs kept as the codec's JSON plus the columns queried (migrate_v9.py)."""
    from orchestrator.store.migrate_v9 import migrate_v9  # the results model loads only when migrating

    migrate_v9(conn)


Migration = str | Callable[[sqlite3.Connection], None]  # a SQL script, or a step that needs the results model
MIGRATIONS: tuple[Migration, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _v9)
SCHEMA_VERSION = len(MIGRATIONS)


def connect(path: Path, migrations: tuple[Migration, ...] = MIGRATIONS) -> sqlite3.Connection:
    """Open (creating if needed) the store at `path`, migrated to the newest schema."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _enable_wal(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        migrate(conn, migrations, source=str(path))
    except sqlite3.DatabaseError as exc:
        raise DataError(f"{path}: not a usable etfarm store ({exc})") from None
    return conn


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL. On a new file two processes may race for that switch, and SQLite answers the
    loser "database is locked" without waiting: retry within the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, migrations: tuple[Migration, ...] = MIGRATIONS, source: str = "store") -> int:
    """Apply the missing migrations in one transaction; returns the version reached."""
    if user_version(conn) == len(migrations):
        return len(migrations)
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = user_version(conn)  # again, now that we hold the write lock
        if version > len(migrations):
            raise DataError(f"{source}: store schema version {version} is newer than this etfarm reads "
                            f"({len(migrations)}); upgrade etfarm")
        for step in range(version, len(migrations)):
            script = migrations[step]
            for statement in _statements(script) if isinstance(script, str) else ():
                conn.execute(statement)
            if callable(script):
                try:
                    script(conn)
                except (ValueError, KeyError, TypeError) as exc:  # a row it cannot read: the store stays as it was
                    raise DataError(f"{source}: cannot migrate to schema version {step + 1}: {exc}") from None
            conn.execute(f"PRAGMA user_version = {step + 1}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return len(migrations)


def _statements(script: str) -> list[str]:
    """A migration script split into statements (executescript would commit our transaction)."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):  # SQLite's own tokenizer: comments and strings understood
            statements.append(pending.strip())
            pending = ""
    if pending.strip():
        statements.append(pending.strip())
    return statements
