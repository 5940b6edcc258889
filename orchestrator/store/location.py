"""Where the store is, and what a run reference (a directory or a stored run id) points at.

The store is `--store FILE`, else `$ETFARM_STORE`, else `$XDG_DATA_HOME/etfarm/results.db`
(`~/.local/share/etfarm/results.db`): data kept for history, not a cache (docs/architecture.md, "Contracts").

The host's own trouble with that path is one line naming it (UsageError, exit 2), never a bug: a
file where one of its directories should be, a directory it cannot create the store in, a full disk.
A store that exists where this process cannot write (a read-only mount, a copy in someone else's
directory) is opened read-only: history, reports and compare read it; recording into it is refused.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from orchestrator.base.errors import DataError, UsageError, environment_problem
from orchestrator.results.record import run_root
from orchestrator.store.db import Store
from orchestrator.store.schema import SCHEMA_VERSION, connect, user_version

# Less free space than this where the store lives: an open that fails is the disk being full.
_NEARLY_FULL_BYTES = 1 << 20

STORE_ENV = "ETFARM_STORE"
STORE_NAME = "results.db"


def store_path(explicit: Path | None = None) -> Path:
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get(STORE_ENV)
    if env:
        return Path(env).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser() / "etfarm" / STORE_NAME


def open_store(path: Path | None = None) -> Store:
    """Open (create, migrate) the store at `path`, or at $ETFARM_STORE, or the default place; read-only
    when it exists where this process cannot write."""
    resolved = store_path(path)
    if resolved.is_dir():
        raise UsageError(f"--store: {resolved} is a directory; name the database file")
    if resolved.exists() and not resolved.is_file():
        raise UsageError(f"--store: {resolved} is not a regular file (a device, a pipe); name the database file")
    check_place(resolved)
    if resolved.is_file() and not _writable(resolved):
        return Store(resolved, connect_read_only(resolved), read_only=True)
    try:
        return Store(resolved, connect(resolved))
    except OSError as exc:
        raise UsageError(f"the results store {resolved}: {environment_problem(exc) or exc}") from None
    except DataError as exc:
        if _nearly_full(resolved.parent):
            raise UsageError(f"the results store {resolved}: its disk is full") from None
        if "database is locked" in str(exc):  # a migration waited out the busy timeout
            raise UsageError(f"the results store {resolved}: another process held it past the 30 s busy timeout "
                             "(try again later)") from None
        raise


def check_place(path: Path) -> None:
    """The store's directory, or the nearest of its parents that exists, is a directory we may write in."""
    for part in path.parents:
        if part.exists():
            if not part.is_dir():
                raise UsageError(f"--store {path}: {part} is a file, not a directory")
            if not path.exists() and not os.access(part, os.W_OK | os.X_OK):
                raise UsageError(f"--store {path}: cannot create it in {part} (read-only, or not ours)")
            return


def _writable(path: Path) -> bool:
    """SQLite in WAL mode writes beside the file too (`-wal`, `-shm`)."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def _nearly_full(folder: Path) -> bool:
    try:
        return shutil.disk_usage(folder).free < _NEARLY_FULL_BYTES
    except OSError:
        return False


def connect_read_only(path: Path) -> sqlite3.Connection:
    """The store opened for reading only. `mode=ro` reads a WAL database whose `-shm` can be made or exists;
    on a read-only mount without one, `immutable=1` (nothing can change the file there)."""
    problem: Exception | None = None
    for mode in ("mode=ro", "immutable=1"):
        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True, isolation_level=None)
        except sqlite3.Error as exc:
            problem = exc
            continue
        try:
            version = user_version(conn)
        except sqlite3.Error as exc:
            conn.close()
            problem = exc
            continue
        if version != SCHEMA_VERSION:
            conn.close()
            raise DataError(f"{path}: a store of schema version {version} where this process cannot write; this etfarm "
                            f"reads version {SCHEMA_VERSION} and cannot migrate it here: open it once where it is writable")
        return conn
    raise DataError(f"{path}: not a usable etfarm store, read-only ({problem})")


def resolve_run(ref: str, store: Path | None = None) -> Path:
    """A run directory from a path to one, or from a stored run id (its recorded directory)."""
    named = run_root(Path(ref).expanduser())
    if named is not None:
        return named.resolve()
    location = store_path(store)
    if not location.is_file():
        raise UsageError(f"{ref}: neither a run directory nor a stored run id (no store at {location})")
    with open_store(location) as opened:
        if not opened.has_job(ref):
            raise UsageError(f"{ref}: neither a run directory nor a run id in the store {location}")
        found = opened.run_dir(ref)
    if found is None:
        raise DataError(f"run {ref}: its run directory is gone (the store keeps its results; see `etfarm history show {ref}`)")
    return found
