"""Process runs streamed from a task as they finish, so a worker that dies mid-task loses nothing collected.

A task's results otherwise come back only when it ends. Here each process run the worker's
session records is announced at once (a Dask event on the run's progress topic: the run's record
and the names of its files, no file contents, so the scheduler holds no bulk). The client queues
the announcement and, in its collect loop, fetches the files from that worker (`client.run`),
writes them under DIR/<device>/ (the same containment check as a task's files) and records the
model as `partial` with the runs so far, through the device's DeviceRecord. The task's final
result, when it comes, replaces that record; a task that ends without one hands its runs so far
(`finish`) to the finisher, as a single-host session finishes a model cut short. Announcements
for a (device, model) already finished are dropped. If the worker is gone before the fetch, that
run is simply not kept.

Worker side: `AnnouncingRunDirectory` (the task's scratch run directory). Client side: `StreamedRuns`.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.base.cache import write_bytes_atomic
from orchestrator.farm.blobs import QUESTION_TIMEOUT_SEC
from orchestrator.results.model import DeviceResult, ModelResult, ModelStatus, ProcessRun
from orchestrator.run.device_record import DeviceRecord
from orchestrator.run.rundir import RunDirectory
from orchestrator.run.schedule import Order

RUN_EVENT = "run"  # the `kind` of an announcement on the progress topic

log = logging.getLogger(__name__)


class AnnouncingRunDirectory(RunDirectory):
    """A task's scratch run directory that calls `announce(model, run)` for each process run it records
    the first time (runs in `quiet_labels`, the ones a resumed task was sent, are not announced)."""

    announce: Callable[[str, ProcessRun], None] = staticmethod(lambda model, run: None)
    quiet_labels: frozenset[str] = frozenset()

    def update_device(self, name: str, change: Callable[[DeviceResult], DeviceResult]) -> DeviceResult:
        before = self.job.device(name)
        updated = super().update_device(name, change)
        for model in updated.models:
            known = {r.label for r in (before.model(model.name).runs if before and before.model(model.name) else ())}
            for run in model.runs:
                if run.label not in known and run.label not in self.quiet_labels:
                    self.announce(model.name, run)
        return updated


def run_event(device: str, model: str, run: ProcessRun, root: Path, worker: str) -> dict[str, Any]:
    """Worker side: the announcement of one finished process run (its record, where its files are)."""
    return {"kind": RUN_EVENT, "device": device, "model": model, "run": run.to_dict(), "root": str(root),
            "files": list(run.artifacts), "worker": worker}


def read_files(root: str, names: list[str]) -> dict[str, bytes]:
    """Worker side (through `client.run`): the files of an announced run, relative to the task's run directory."""
    base = Path(root)
    return {name: (base / name).read_bytes() for name in names if (base / name).is_file()}


@dataclass(frozen=True)
class Announced:
    device: str
    model: str
    run: ProcessRun
    root: str
    files: tuple[str, ...]
    worker: str


class StreamedRuns:
    """Client side: announcements queued by the event handler (the client's IO thread), taken in the
    collect loop (the main thread), where fetching and writing may block."""

    def __init__(self, records: Mapping[str, DeviceRecord], place: Callable[[str, str], Path]) -> None:
        self.records = records  # device -> its record in the job's run directory
        self.place = place  # (device, relative name) -> path under DIR/<device>/, or DeviceError
        self.queue: collections.deque[Announced] = collections.deque()
        self.runs: dict[tuple[str, str], dict[str, ProcessRun]] = {}
        self.finished: set[tuple[str, str]] = set()

    def offer(self, message: dict[str, Any]) -> bool:
        """From the event handler: True when `message` was a run announcement (queued)."""
        if message.get("kind") != RUN_EVENT:
            return False
        self.queue.append(Announced(str(message["device"]), str(message["model"]), ProcessRun.from_dict(message["run"]),
                                    str(message["root"]), tuple(message.get("files") or ()), str(message["worker"])))
        return True

    def start(self, device: str, model: str, done: Iterable[ProcessRun]) -> None:
        """A task is sent: the runs it carries (resume) are the model's runs so far."""
        self.runs[(device, model)] = {run.label: run for run in done}
        self.finished.discard((device, model))

    def finish(self, device: str, model: str) -> Order:
        """The task ended (later announcements of it are stale): the model's runs kept so far, in order."""
        self.finished.add((device, model))
        return [(model, run) for run in self.runs.get((device, model), {}).values()]

    def collect(self, client: Any) -> int:
        """Fetch and record every queued run; returns how many were kept."""
        kept = 0
        while self.queue:
            item = self.queue.popleft()
            if (item.device, item.model) in self.finished:
                continue
            try:
                files = client.run(read_files, item.root, list(item.files), workers=[item.worker],
                                   callback_timeout=QUESTION_TIMEOUT_SEC)[item.worker]  # a frozen worker: given up
                if set(files) != set(item.files):  # the task ended and cleaned up: its final result has them
                    raise FileNotFoundError(", ".join(sorted(set(item.files) - set(files))))
                targets = {self.place(item.device, name): data for name, data in files.items()}
            except Exception as exc:  # noqa: BLE001 - worker gone (any comm error), or a path outside its device
                log.debug("streamed run %s of %s on %s not kept: %s", item.run.label, item.model, item.device, exc)
                continue
            for path, data in targets.items():
                write_bytes_atomic(path, data)
            runs = self.runs.setdefault((item.device, item.model), {})
            runs[item.run.label] = item.run
            self.records[item.device].model(ModelResult(item.model, ModelStatus.PARTIAL, tuple(runs.values())))
            kept += 1
        return kept
