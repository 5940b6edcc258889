"""Streamed process runs without a cluster: what the worker announces, what the client keeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.farm.executor import inside
from orchestrator.farm.streamed import AnnouncingRunDirectory, StreamedRuns, read_files, run_event
from orchestrator.results.model import DeviceResult, DeviceStatus, JobConfig, ModelResult, ModelStatus, ProcessRun
from orchestrator.run.device_record import DeviceRecord
from orchestrator.run.rundir import RunDirectory


def _run(label: str, device: str = "d", model: str = "m") -> ProcessRun:
    return ProcessRun(label, True, (1.0, 2.0), artifacts=(f"{device}/{model}/{label}/etdump.etdp",))


def test_the_worker_announces_each_new_run_once_and_not_the_ones_it_was_sent(tmp_path: Path) -> None:
    rundir = AnnouncingRunDirectory.create(tmp_path / "run", JobConfig(("d",), ("m.py",), "portable"))
    heard: list[tuple[str, str]] = []
    rundir.announce = lambda model, run: heard.append((model, run.label))  # type: ignore[method-assign]
    rundir.quiet_labels = frozenset({"run-1"})
    rundir.add_device(DeviceResult("d", "ssh", "host", DeviceStatus.RUNNING))
    for runs in ((_run("run-1"), _run("run-2")), (_run("run-1"), _run("run-2"), _run("run-3"))):
        rundir.update_device("d", lambda d, runs=runs: d.with_model(ModelResult("m", ModelStatus.PARTIAL, runs)))
    rundir.update_device("d", lambda d: d)  # nothing new: nothing said
    assert heard == [("m", "run-2"), ("m", "run-3")]


class FakeClient:
    """`client.run(read_files, ...)` on one worker: reads from a directory standing for its disk."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls = 0

    def run(self, function: Any, *args: Any, workers: list[str], callback_timeout: float) -> dict[str, Any]:
        assert callback_timeout > 0  # every fetch has a deadline
        self.calls += 1
        if self.fail:
            raise OSError("worker gone")
        return {workers[0]: function(*args)}


def _client_side(tmp_path: Path) -> tuple[RunDirectory, StreamedRuns, Path]:
    rundir = RunDirectory.create(tmp_path / "job", JobConfig(("d",), ("m.py",), "portable"))
    record = DeviceRecord(rundir, "d", "ssh", "host", lambda message: None)
    record.start()
    worker_root = tmp_path / "worker-scratch"
    for label in ("run-1", "run-2"):
        (worker_root / "d" / "m" / label).mkdir(parents=True)
        (worker_root / "d" / "m" / label / "etdump.etdp").write_bytes(label.encode())
    return rundir, StreamedRuns({"d": record}, lambda device, rel: inside(rundir.root, device, rel)), worker_root


def test_the_client_fetches_announced_runs_and_records_the_model_partial(tmp_path: Path) -> None:
    rundir, streamed, worker_root = _client_side(tmp_path)
    kept = _run("run-0")
    streamed.start("d", "m", (kept,))  # a resumed task carried run-0
    assert not streamed.offer({"device": "d", "message": "progress line"})
    for label in ("run-1", "run-2"):
        assert streamed.offer(run_event("d", "m", _run(label), worker_root, "tcp://w:1"))
    assert streamed.collect(FakeClient()) == 2
    model = rundir.job.device("d").model("m")  # type: ignore[union-attr]
    assert model is not None and model.status is ModelStatus.PARTIAL
    assert [r.label for r in model.runs] == ["run-0", "run-1", "run-2"]
    assert (rundir.root / "d" / "m" / "run-2" / "etdump.etdp").read_bytes() == b"run-2"
    # The task ends without a reply: its runs so far, in order, for the finisher; later announcements are stale.
    assert [(name, run.label) for name, run in streamed.finish("d", "m")] == [("m", "run-0"), ("m", "run-1"),
                                                                               ("m", "run-2")]


def test_stale_unreachable_or_misplaced_announcements_are_not_kept(tmp_path: Path) -> None:
    rundir, streamed, worker_root = _client_side(tmp_path)
    streamed.start("d", "m", ())
    streamed.offer(run_event("d", "m", _run("run-1"), worker_root, "tcp://w:1"))
    streamed.finish("d", "m")  # the task's final result came first
    client = FakeClient()
    assert streamed.collect(client) == 0 and client.calls == 0
    streamed.start("d", "m", ())
    streamed.offer(run_event("d", "m", _run("run-1"), worker_root, "tcp://w:1"))
    assert streamed.collect(FakeClient(fail=True)) == 0  # the worker died before the fetch
    escaping = ProcessRun("run-1", True, (1.0,), artifacts=("../etc/passwd",))
    streamed.offer(run_event("d", "m", escaping, worker_root, "tcp://w:1"))
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("x")
    assert streamed.collect(FakeClient()) == 0  # a file outside d/ is refused, the run not recorded
    streamed.offer(run_event("d", "m", _run("run-3"), worker_root, "tcp://w:1"))
    assert streamed.collect(FakeClient()) == 0  # its files are gone (the task ended): not recorded without them
    assert rundir.job.device("d").models == ()  # type: ignore[union-attr]
    assert read_files(str(worker_root), ["d/m/run-1/etdump.etdp", "d/m/nosuch"]) == {"d/m/run-1/etdump.etdp": b"run-1"}
