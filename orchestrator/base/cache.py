"""Content-addressed caches under $ETFARM_CACHE_DIR (default ~/.cache/etfarm).

Everything here is safe to delete: exports, runner builds, downloaded runtimes.
Entries are written to a temporary sibling and renamed into place, so a crash
never leaves a half-written entry that looks complete.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orchestrator.base.errors import UsageError

HASH_CHUNK_BYTES = 1 << 20


def cache_root() -> Path:
    explicit = os.environ.get("ETFARM_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "etfarm"


def cache_dir(kind: str) -> Path:
    path = cache_root() / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_parts(parts: Iterable[bytes | str]) -> str:
    """Hash a sequence of parts unambiguously (each part is length-prefixed)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def publish_dir(staging: Path, final: Path) -> Path:
    """Atomically move a completed staging dir to `final`; a concurrent winner is kept.

    Every file and directory of the entry is fsynced before the rename (and the parent after it),
    so a power cut cannot leave a published entry whose files are empty or torn."""
    final.parent.mkdir(parents=True, exist_ok=True)
    fsync_tree(staging)
    try:
        os.rename(staging, final)
    except OSError:
        if final.is_dir():  # another process published the same key first
            shutil.rmtree(staging, ignore_errors=True)
        else:
            raise
    _fsync_path(final.parent, directory=True)
    return final


def fsync_tree(root: Path) -> None:
    """fsync every regular file under root, then every directory (deepest first), then root."""
    for folder, dirs, files in os.walk(root, topdown=False):
        for name in files:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                _fsync_path(path, directory=False)
        for name in dirs:
            if not (Path(folder) / name).is_symlink():
                _fsync_path(Path(folder) / name, directory=True)
    _fsync_path(root, directory=True)


def _fsync_path(path: Path, directory: bool) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def file_lock(path: Path, on_wait: Callable[[], None] = lambda: None) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing); `on_wait` is called once if another process holds
    it. The kernel drops the lock when its holder exits, killed or not, so a crashed holder never blocks."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextmanager
def making(kind: str, key: str, on_wait: Callable[[], None] = lambda: None) -> Iterator[None]:
    """One process at a time makes the entry `key` of `kind`: two etfarm processes on one host that miss the same
    export or runner build make it once, the second finding it made when the first is done (callers look again
    inside). Published entries need no lock to be read: publish_dir renames them into place whole."""
    with file_lock(cache_dir(kind) / f".making-{key[:32]}.lock", on_wait):
        yield


def staging_dir(kind: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=".tmp-", dir=cache_dir(kind)))


# A directory must take this much before a job writes in it: a full disk still takes a new empty file
# (an inode) and then not one byte, so creating a file alone says nothing.
WRITE_PROBE_BYTES = 64 << 10


def cannot_write_in(folder: Path) -> str | None:
    """Why `folder` cannot take a file, in the system's words ("Read-only file system", "No space left on
    device"), or None. A real write (root passes `os.access` on a read-only mount), removed at once."""
    try:
        with tempfile.TemporaryFile(dir=folder) as probe:
            probe.write(bytes(WRITE_PROBE_BYTES))
            probe.flush()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def write_bytes_atomic(path: Path, data: bytes, mode: int = 0o644, durable: bool = True) -> Path:
    """The one atomic writer: a temporary sibling, flushed and fsynced, then renamed over `path`.

    Readers see the old file or the new one, never a torn one; a crash leaves at most a
    `.tmp-*` sibling, which is removed when the write itself fails. `mode` is the file's
    permissions (mkstemp's own 0600 would hide run outputs from other users). `durable=False`
    skips the fsync, for files made again from elsewhere (a dashboard site, from the store:
    hundreds a night, where each fsync costs more than writing it).
    """
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not path.is_file():  # never rename over /dev/null, a fifo, a dir
        raise UsageError(f"{path}: exists and is not a regular file (a device, a pipe, a directory); "
                         "refusing to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path: Path, text: str, mode: int = 0o644) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"), mode)


def write_json_atomic(path: Path, data: object) -> Path:
    """JSON as JSON is: a non-finite number (a statistic with nothing to divide by) is written as null."""
    return write_text_atomic(path, json.dumps(finite_json(data), indent=2, sort_keys=True, default=str,
                                              allow_nan=False) + "\n")


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON object etfarm wrote beside a run (verdicts.json, night.json), or {} when it is missing, cannot be
    read, or is not an object: such files only add marks to what the store already holds."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def finite_json(value: Any) -> Any:
    """A value as JSON can hold it: a non-finite number is None, tuples are lists; nothing else changes.
    What etfarm writes as JSON (the manifest, the store, its own files) goes through it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value
