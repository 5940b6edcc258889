"""What was read from files, kept while the files stay as they were: the one memo of profiles' parsed files.

An ETRecord, its edge graph or a .pte is parsed once per process however many devices and models
ask for it; a file rewritten in place (another export into the same path) has another key
(real path, mtime, size) and is read again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from orchestrator.base.errors import AnalysisError

V = TypeVar("V")
FileKey = tuple[str, int, int]


def file_key(path: str | os.PathLike[str], what: str = "file") -> FileKey:
    """The file as it is now; AnalysisError naming it when it is not there."""
    try:
        st = os.stat(path)
    except OSError:
        raise AnalysisError(f"{path}: no such {what}") from None
    return os.path.realpath(path), st.st_mtime_ns, st.st_size


class FileMemo(Generic[V]):
    """Values computed from files, per the files' keys; safe across the threads of a job."""

    def __init__(self) -> None:
        self._values: dict[tuple[FileKey, ...], V] = {}
        self._lock = threading.Lock()

    def get(self, keys: Sequence[FileKey], read: Callable[[], V]) -> V:
        """The value for these files, computed by `read` the first time (two threads may both read: the
        results are equal, and a parse is not held under the lock)."""
        key = tuple(keys)
        with self._lock:
            if key in self._values:
                return self._values[key]
        value = read()
        with self._lock:
            self._values[key] = value
        return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
