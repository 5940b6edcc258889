"""The host's places a command writes, checked before any work: one line naming the path (exit 2).

A run directory on a read-only mount given to `--resume` or `etfarm numerics`, or a results store
under a regular file, would otherwise fail only after minutes of work, as an internal error.
"""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.base.cache import cannot_write_in
from orchestrator.base.errors import UsageError
from orchestrator.store.location import check_place, store_path


def check_writable_dir(path: Path, what: str) -> None:
    """`path` is a directory this process can create files in (a real probe: root passes `os.access`
    on a read-only bind mount only by its flag, and a full disk is no place either)."""
    if not path.is_dir():
        raise UsageError(f"{what} {path}: not a directory")
    refusal = cannot_write_in(path)
    if refusal is not None:
        raise UsageError(f"{what} {path}: cannot write in it ({refusal})")
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: cannot write in it (permission denied)")


def check_store_place(store: Path | None) -> None:
    """The results store a job will record into can be made where it is named (before the job runs)."""
    check_place(store_path(store))

