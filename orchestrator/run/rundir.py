"""The run directory contract (docs/architecture.md, "Contracts: the run directory"): where every artifact of a job lands.

    DIR/manifest.json                          the results model (results.Job), serialised
    DIR/stats.csv                              per-event statistics, all devices and models
    DIR/samples.npz                            the samples they came from, per op (results/samples.py)
    DIR/etfarm.log                             the job's full DEBUG log
    DIR/<device>/<model>/device.json           what the device was
    DIR/<device>/<model>/run-<k>/etdump.etdp   raw artifacts of process run k (+ outputs, log, result)
    DIR/<device>/<model>/e2e-<k>/              untraced run k (no event tracer)

`RunDirectory` owns the job's `Job` record while it runs: device threads hand it new frozen
results, it swaps them in under a lock and rewrites the manifest atomically after each step
(temp file, fsync, rename). When the host disk is full (or turned read-only) the manifest cannot be
written: the record stays in memory and the next write tries again, so a full disk fails the devices
that hit it (session.py: "host disk full: PATH") instead of every thread. The job's last word must
land all the same (a manifest left saying `running` would hide a failed job), so while the job runs
the directory holds back room for it: DIR/.etfarm-reserve, twice the manifest's size, given back
just before the last write.
`RunDirectory.reopen` continues a recorded job for `etfarm run --resume` (same run id).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import platform
import secrets
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from orchestrator import __version__
from orchestrator.base.cache import cannot_write_in, write_json_atomic
from orchestrator.base.errors import ENVIRONMENT_ERRNOS, UsageError
from orchestrator.base.versions import tool_versions
from orchestrator.results.layout import SAMPLES, STATS
from orchestrator.results.model import (
    MANIFEST_NAME,
    DeviceResult,
    Job,
    JobConfig,
    JobStatus,
    LeftOut,
    ModelArtifacts,
    load_manifest,
)

__all__ = ["DEVICE_JSON", "LOG", "MANIFEST", "ROLLUPS", "SAMPLES", "STATS", "RunDirectory", "as_recorded",
           "check_out", "new_run_id", "now"]

log = logging.getLogger(__name__)

MANIFEST = MANIFEST_NAME
ROLLUPS = "rollups.csv"  # time per module subtree and per op type, from stats.csv (profiles/rollups.py)
LOG = "etfarm.log"
DEVICE_JSON = "device.json"
DEFAULT_ROOT = Path("etfarm-runs")
RESERVE = ".etfarm-reserve"  # room held back for the last manifest while the job runs
RESERVE_MIN_BYTES = 64 << 10


def check_out(out: Path | None) -> None:
    """Refuse an --out that already holds a run, or that cannot be written, before any work.

    Usage errors (exit 2): re-using a run directory would overwrite its results (`--resume`
    continues one); an unwritable place would only fail after minutes of exporting.
    """
    if out is None:
        out = DEFAULT_ROOT
    else:
        if (out / MANIFEST).exists():
            raise UsageError(f"--out {out}: already holds a run; choose a new directory (or --resume {out})")
        if out.exists() and not out.is_dir():
            raise UsageError(f"--out {out}: exists and is not a directory")
        if out.is_dir() and any(out.iterdir()):
            raise UsageError(f"--out {out}: directory is not empty; choose a new one")
    probe = out
    while not probe.exists():  # the nearest existing ancestor is where the directory will be made
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: {probe} is not writable")
    refusal = cannot_write_in(probe)
    if refusal is not None:  # a full disk too: before minutes of exporting, not after them
        raise UsageError(f"--out {out}: cannot write in {probe}: {refusal}")


def as_recorded(job: Job) -> Job:
    """The job exactly as its manifest.json records it, what `load_manifest` would give back: names (devices,
    models, facts) in the file's sorted order. Readers handed a job in memory see what readers of the file see."""
    return Job.from_dict(json.loads(json.dumps(job.to_dict(), sort_keys=True, default=str)), source=MANIFEST)


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class RunDirectory:
    """A job's directory and its manifest; thread-safe, every change written atomically."""

    def __init__(self, root: Path, job: Job) -> None:
        self.root = root
        self._job = job
        self._lock = threading.Lock()
        self._held: int | None = None  # the flock on the directory while this process writes in it
        self._reserved = 0  # bytes DIR/.etfarm-reserve holds back for the last manifest
        self._unwritten = False  # the disk refused the manifest (said once)

    def _hold(self) -> None:
        """One etfarm at a time writes in a run directory (an flock on the directory itself, gone when the
        process ends however it ends): a `--resume` while the job or another resume still runs is refused."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UsageError(f"{self.root}: another etfarm is working in this run directory; wait for it to end") from None
        self._held = fd

    def _release(self) -> None:
        if self._held is not None:
            os.close(self._held)
            self._held = None

    @classmethod
    def create(cls, out: Path | None, config: JobConfig, models: tuple[ModelArtifacts, ...] = (),
               run_id: str | None = None, left_out: tuple[LeftOut, ...] = ()) -> RunDirectory:
        """A new job's directory; `run_id` when the caller chose it (a nightly names the directory after it)."""
        run_id = run_id or new_run_id()
        root = (out if out is not None else DEFAULT_ROOT / run_id).resolve()
        root.mkdir(parents=True, exist_ok=True)
        job = Job(run_id=run_id, status=JobStatus.RUNNING, started=now(), config=config, versions=_versions(),
                  host={"hostname": platform.node(), "machine": platform.machine(), "python": sys.version.split()[0]},
                  models=models, left_out=left_out)
        rundir = cls(root, job)
        rundir._hold()
        rundir.save()
        return rundir

    @classmethod
    def reopen(cls, root: Path) -> RunDirectory:
        """A recorded run directory, running again (resume): same run id, devices as recorded."""
        job = load_manifest(root)
        rundir = cls(root.resolve(), replace(job, status=JobStatus.RUNNING, finished=None))
        rundir._hold()
        rundir.save()
        return rundir

    @property
    def run_id(self) -> str:
        return self._job.run_id

    @property
    def job(self) -> Job:
        """The job as recorded so far (a frozen snapshot)."""
        return self._job

    def model_dir(self, device: str, model: str) -> Path:
        path = self.root / device / model
        path.mkdir(parents=True, exist_ok=True)
        return path

    def process_run_dir(self, device: str, model: str, label: str) -> Path:
        """DIR/<device>/<model>/<label>: the files of one process run (`run-k`, `e2e-k`)."""
        path = self.model_dir(device, model) / label
        path.mkdir(parents=True, exist_ok=True)
        return path

    def relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.root).as_posix()

    def update_device(self, name: str, change: Callable[[DeviceResult], DeviceResult]) -> DeviceResult:
        """Apply `change` to the device's record (which must exist) and save."""
        with self._lock:
            current = self._job.device(name)
            if current is None:
                raise KeyError(name)
            updated = change(current)
            self._job = self._job.with_device(updated)
            self._write()
            return updated

    def add_device(self, result: DeviceResult) -> None:
        with self._lock:
            self._job = self._job.with_device(result)
            self._write()

    def finish(self, status: JobStatus) -> Job:
        """The job's last manifest: written in the room held back for it, so a disk that filled mid-run still
        leaves a manifest that says how the job ended (never `running`)."""
        with self._lock:
            self._job = replace(self._job, status=status, finished=now())
            self._give_back_reserve()
            if not self._write(hold_back=False):
                log.warning("%s: the job's end (%s) could not be recorded; it still says `running`",
                            self.root / MANIFEST, status.value)
            self._release()
            return self._job

    def save(self) -> None:
        with self._lock:
            self._write()

    def _write(self, *, hold_back: bool = True) -> bool:
        """The manifest as the job is now; False when the host's disk refuses it (full, read-only)."""
        try:
            written = write_json_atomic(self.root / MANIFEST, self._job.to_dict())
        except OSError as exc:
            if exc.errno not in ENVIRONMENT_ERRNOS:
                raise
            if not self._unwritten:
                log.warning("host disk full or read-only: %s not updated (%s; kept in memory, written again later)",
                            self.root / MANIFEST, exc.strerror or exc)
            self._unwritten = True
            return False
        if hold_back:
            self._hold_back(2 * written.stat().st_size)
        return True

    def _hold_back(self, size: int) -> None:
        """DIR/.etfarm-reserve holds at least `size` bytes (best effort: a disk without room gets none)."""
        size = max(size, RESERVE_MIN_BYTES)
        if size <= self._reserved:
            return
        try:
            fd = os.open(self.root / RESERVE, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                os.posix_fallocate(fd, 0, size)
            finally:
                os.close(fd)
        except OSError as exc:
            log.debug("could not hold back %d bytes in %s: %s", size, self.root, exc)
            return
        self._reserved = size

    def _give_back_reserve(self) -> None:
        try:
            (self.root / RESERVE).unlink(missing_ok=True)
        except OSError as exc:  # a read-only directory: nothing to give back there anyway
            log.debug("could not remove %s: %s", self.root / RESERVE, exc)
        self._reserved = 0


def _versions() -> dict[str, str]:
    return {"etfarm": __version__, **tool_versions()}
