"""Where the store is, and what a run reference (a directory or a stored run id) points at.

The store is `--store FILE`, else `$ETFARM_STORE`, else `$XDG_DATA_HOME/etfarm/results.db`
(`~/.local/share/etfarm/results.db`): data kept for history, not a cache (docs/architecture.md, "Contracts").
"""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.errors import DataError, UsageError
from orchestrator.run.results import MANIFEST_NAME
from orchestrator.store.db import Store
from orchestrator.store.schema import connect

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
    """Open (create, migrate) the store at `path`, or at $ETFARM_STORE, or the default place."""
    resolved = store_path(path)
    if resolved.is_dir():
        raise UsageError(f"--store: {resolved} is a directory; name the database file")
    return Store(resolved, connect(resolved))


def resolve_run(ref: str, store: Path | None = None) -> Path:
    """A run directory from a path to one, or from a stored run id (its recorded directory)."""
    candidate = Path(ref).expanduser()
    if candidate.is_dir() and (candidate / MANIFEST_NAME).is_file():
        return candidate.resolve()
    if candidate.name == MANIFEST_NAME and candidate.is_file():
        return candidate.parent.resolve()
    location = store_path(store)
    if not location.is_file():
        raise UsageError(f"{ref}: neither a run directory nor a stored run id (no store at {location})")
    with open_store(location) as opened:
        if not opened.has_run(ref):
            raise UsageError(f"{ref}: neither a run directory nor a run id in the store {location}")
        found = opened.run_dir(ref)
    if found is None:
        raise DataError(f"run {ref}: its run directory is gone (the store keeps its results; see `etfarm history show {ref}`)")
    return found
