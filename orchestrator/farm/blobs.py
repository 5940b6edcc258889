"""Artifacts shipped by content: a worker keeps files by sha256 and never receives one twice.

The client names every file a task needs by its sha256 (`BlobRef`); before submitting it asks each
worker which hashes it lacks (`missing`, run on the worker) and sends only those (`put`, which
checks the hash before storing). A task materialises its files from the store under their own
names (hard links, no copy) so the device session sees ordinary paths. The store lives under the
worker's cache (`$ETFARM_CACHE_DIR/blobs`), safe to delete like any cache.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.base.cache import cache_dir, sha256_file, write_bytes_atomic

if TYPE_CHECKING:
    from orchestrator.artifacts.build import RunnerBuild
    from orchestrator.artifacts.lowering import ExportedModel
    from orchestrator.results.model import ProcessRun

QUESTION_TIMEOUT_SEC = 30.0  # one small request to a worker (which hashes it lacks, a file's bytes back)
MIN_BANDWIDTH_BPS = 1_000_000  # a put may take as long as 1 MB/s needs, on top of the question's deadline
# Every file of an ExportedModel a device session reads (by its field's name): a role missing here is a figure the
# farm silently does not record (eager_outputs: a recipe's accuracy), so the task builds its model from these alone.
MODEL_ROLES = ("pte", "etrecord", "inputs", "reference_outputs", "numerics_reference", "llm_reference", "eager_outputs",
               "eager_reference")


def put_timeout_s(nbytes: int) -> float:
    return QUESTION_TIMEOUT_SEC + nbytes / MIN_BANDWIDTH_BPS


@dataclass(frozen=True)
class BlobRef:
    """A file the task needs: where it goes (relative name) and its content hash."""

    name: str
    sha256: str


@dataclass(frozen=True)
class ShipReport:
    sent: int
    skipped: int
    bytes_sent: int


def store_dir() -> Path:
    return cache_dir("blobs")


def missing(hashes: Iterable[str]) -> list[str]:
    """Worker side: the hashes not in this worker's store."""
    root = store_dir()
    return [h for h in hashes if not (root / h).is_file()]


def put(sha256: str, data: bytes) -> int:
    """Worker side: store `data` under its hash (refused if it does not match). Returns its size."""
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(f"blob {sha256[:12]}: content does not match its hash")
    write_bytes_atomic(store_dir() / sha256, data, mode=0o755)
    return len(data)


def materialize(refs: Iterable[BlobRef], into: Path) -> dict[str, Path]:
    """Worker side: each blob at `into/<name>` (a hard link into the store, a copy across filesystems)."""
    root = store_dir()
    paths: dict[str, Path] = {}
    for ref in refs:
        target = into / ref.name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(root / ref.sha256, target)
        except OSError:
            shutil.copy2(root / ref.sha256, target)
        paths[ref.name] = target
    return paths


def refs_for(files: Mapping[str, Path]) -> tuple[tuple[BlobRef, ...], dict[str, Path]]:
    """Client side: refs for named local files, and the local path of each hash."""
    refs = tuple(BlobRef(name, sha256_file(path)) for name, path in sorted(files.items()))
    by_hash = {ref.sha256: files[ref.name] for ref in refs}
    return refs, by_hash


class JobBlobs:
    """Client side: the files one job ships, named as its tasks know them (`runner/...`, `model/NAME/...`, a
    finished run's files relative to the run directory), and the local path of each hash, to send what a
    worker lacks."""

    def __init__(self) -> None:
        self._paths: dict[str, Path] = {}

    def refs(self, files: Mapping[str, Path]) -> tuple[BlobRef, ...]:
        refs, by_hash = refs_for(files)
        self._paths.update(by_hash)
        return refs

    def runner(self, build: RunnerBuild) -> tuple[BlobRef, ...]:
        return self.refs({f"runner/{rel}": path for rel, path in build.stage_files().items()})

    def model(self, model: ExportedModel) -> tuple[tuple[BlobRef, ...], dict[str, str]]:
        """The model's files and, per role (MODEL_ROLES), the blob name a task finds it under."""
        roles = {role: path for role in MODEL_ROLES if (path := getattr(model, role)) is not None}
        named = {role: f"model/{model.name}/{Path(path).name}" for role, path in roles.items()}
        return self.refs({named[role]: Path(path) for role, path in roles.items()}), named

    def prior(self, root: Path, device: str, model: str, done: Iterable[ProcessRun]) -> tuple[BlobRef, ...]:
        """The files of a model's finished runs, named relative to the run directory (the worker puts them
        at the same place in its own run directory, where the session reads them to analyse every run)."""
        files = {}
        for run in done:
            run_dir = root / device / model / run.label
            for path in sorted(run_dir.rglob("*")) if run_dir.is_dir() else ():
                if path.is_file() and not path.is_symlink():
                    files[path.relative_to(root).as_posix()] = path
        return self.refs(files)

    def paths(self, hashes: Iterable[str]) -> dict[str, Path]:
        return {h: self._paths[h] for h in sorted(hashes)}


def ship(client: Any, worker: str, by_hash: Mapping[str, Path]) -> ShipReport:
    """Client side: ask `worker` which hashes it lacks, then send only those, one file per message.
    Each message has a deadline (`callback_timeout` of Client.sync, which Client.run passes on): a
    worker frozen mid-conversation raises TimeoutError (an OSError) instead of holding the job."""
    lacking = client.run(missing, list(by_hash), workers=[worker], callback_timeout=QUESTION_TIMEOUT_SEC)[worker]
    sent = 0
    for sha in lacking:
        data = by_hash[sha].read_bytes()
        sent += client.run(put, sha, data, workers=[worker], callback_timeout=put_timeout_s(len(data)))[worker]
    return ShipReport(sent=len(lacking), skipped=len(by_hash) - len(lacking), bytes_sent=sent)
