"""Faults mid-job: a device whose SSH server dies fails alone, and nothing already collected is lost."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from device_agents import DeviceSpec
from tests.helpers.docs_pages import fault_bounds, run_retry_bounds
from tests.helpers.exports import export_ahead
from tests.helpers.held_run import held_run_2
from tests.helpers.inspector_stats import measured_samples
from tests.helpers.inventory import write_inventory
from tests.integration.testbed import descendant_pids

REPO = Path(__file__).resolve().parents[2]
MLP = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"


def wait_for(path: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout_s}s")
        time.sleep(0.2)


@dataclass(frozen=True)
class FaultyJob:
    out: Path
    returncode: int
    stdout: str
    stderr: str
    after_fault_s: float  # from the fault to the job's end
    finished_s: dict[str, float]  # per device: when its last progress line came, in seconds from the job's start
    given_up_s: dict[str, float]  # per device: from the fault to its FAILED line, as this test process saw it

    def given_up_after_fault_s(self, device: str) -> float:
        """How long the faulty device took to be given up: the bound docs/how-to/boards.md states. Not the job's end,
        which also waits for the other devices, the statistics, the store and the report."""
        assert device in self.given_up_s, self.stderr[-3000:]
        return self.given_up_s[device]


def device_finish_times(stderr: str) -> dict[str, float]:
    """The elapsed-time prefix of each device's last progress line ("[  12.3s] [local] ...")."""
    times: dict[str, float] = {}
    for match in re.finditer(r"^\[ *(\d+\.\d)s\] \[([^\]]+)\] ", stderr, re.MULTILINE):
        times[match.group(2)] = float(match.group(1))
    return times


def run_with_fault(host: object, device: str, tmp_path: Path, fault: Callable[[], None],
                   extra_args: tuple[str, ...] = (), finish_within_s: float = 300) -> FaultyJob:
    """`etfarm run` over an SSH device on `host` and `local`; `fault` strikes once the device's run 1 is pulled,
    while its run 2 is held on the device (released after the fault): runs remain, whatever the host's speed."""
    release = tmp_path / f"release-{device}-run-2"
    faulty = host.spec(device, tmp_path / f"{device}-workdir", exec_prefix=held_run_2(release))  # type: ignore[attr-defined]
    local = DeviceSpec("local", "host", str(tmp_path / "local-workdir"))
    config = write_inventory(tmp_path / "devices.yaml", [faulty, local])
    out = tmp_path / "run"
    export_ahead(MLP, backend="portable")
    job = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", "--config", str(config), "--devices", f"{device},local",
         "--model", MLP, "--backend", "portable", "--runs", "3", "--iterations", "3", "--untraced-runs", "0",
         *extra_args, "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    lines: list[tuple[float, str]] = []  # stderr, each line with the time it arrived here
    readers = [threading.Thread(target=_read_lines, args=(job.stderr, lines), daemon=True)]
    stdout_lines: list[tuple[float, str]] = []
    readers.append(threading.Thread(target=_read_lines, args=(job.stdout, stdout_lines), daemon=True))
    for reader in readers:
        reader.start()
    try:
        wait_for(out / device / "tiny_mlp" / "run-1" / "etdump.etdp", timeout_s=240)
        fault()
        struck_at = time.monotonic()
        release.touch()
        job.wait(timeout=finish_within_s)
        ended_at = time.monotonic()
        for reader in readers:
            reader.join(30)
    finally:
        release.touch()
        if job.poll() is None:
            job.kill()
    stderr = "".join(line for _, line in lines)
    given_up = {match.group(1): at - struck_at for at, line in lines
                if (match := re.match(r"^\[ *\d+\.\ds\] \[([^\]]+)\] FAILED: ", line))}
    return FaultyJob(out, job.returncode, "".join(line for _, line in stdout_lines), stderr, ended_at - struck_at,
                     device_finish_times(stderr), given_up)


def _read_lines(stream: object, into: list[tuple[float, str]]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.append((time.monotonic(), line))


@pytest.mark.slow
def test_sshd_killed_mid_job(ssh_server_factory: Callable[[], object], tmp_path: Path) -> None:
    host = ssh_server_factory()
    # The board loses power: sshd and every session die.
    job = run_with_fault(host, "doomed", tmp_path, fault=host.stop)  # type: ignore[attr-defined]
    assert job.returncode == 1, job.stderr[-3000:]

    out = job.out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "partial"
    assert manifest["devices"]["local"]["status"] == "ok"
    failed = manifest["devices"]["doomed"]
    assert failed["status"] == "failed" and failed["error"]
    # What the doomed device delivered before it died is still there.
    assert (out / "doomed" / "tiny_mlp" / "run-1" / "etdump.etdp").stat().st_size > 0
    assert (out / "doomed" / "tiny_mlp" / "device.json").is_file()
    # The healthy device's results are complete; the doomed one's finished runs are analysed (partial).
    stats = pd.read_csv(out / "stats.csv")
    assert set(stats["device"]) == {"local", "doomed"}
    execute = measured_samples(stats[stats["event_name"] == "Method::execute"].set_index("device"))
    assert int(execute["local"]) == 3 * 3
    assert int(execute["doomed"]) == 3  # run 1 only: run 2 was held on the device until sshd died
    assert manifest["devices"]["doomed"]["models"]["tiny_mlp"]["status"] == "partial"
    assert "doomed: FAILED" in job.stdout


@pytest.mark.slow
def test_frozen_device_is_given_up_within_the_deadline(ssh_server_factory: Callable[[], object], tmp_path: Path) -> None:
    """A stalled peer (SIGSTOP: no RST, no data) must not hang the job past --timeout plus the host grace."""
    host = ssh_server_factory()
    timeout_s = 8
    bounds = fault_bounds()  # the docs' numbers, not the code's constants

    def freeze() -> None:
        for pid in [host.proc.pid, *descendant_pids(host.proc.pid)]:  # type: ignore[attr-defined]
            try:  # the whole board freezes: sshd, its sessions, the runner
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass  # a short-lived command ended between listing and signalling

    retry = run_retry_bounds()
    connect_timeout_s = host.spec("x", tmp_path).settings.connect_timeout  # type: ignore[attr-defined]
    job = run_with_fault(host, "frozen", tmp_path, fault=freeze, extra_args=("--timeout", str(timeout_s)),
                         finish_within_s=timeout_s + bounds.housekeeping_s + bounds.grace_s + 120)
    assert job.returncode == 1, job.stderr[-3000:]
    # Whatever step the freeze caught (the runner, a housekeeping command, a transfer), the bound the docs state
    # holds: the runner's step (--timeout + the housekeeping allowance) or the stall time, plus the host's
    # grace; then the retries of a cut-off process run: reconnects (each within the connect timeout), the
    # waits between them, and the bounded release of the device lock.
    deadline = (timeout_s + bounds.housekeeping_s + bounds.grace_s
                + retry.reconnects * connect_timeout_s + retry.waits_s + retry.release_s)
    given_up_s = job.given_up_after_fault_s("frozen")
    assert given_up_s < deadline + 10, (given_up_s, deadline, job.stderr[-3000:])
    # The devices ran in parallel: the healthy one finished long before the frozen one was given up,
    # instead of waiting behind it.
    assert job.finished_s["local"] < job.finished_s["frozen"] - bounds.housekeeping_s / 2, job.finished_s
    manifest = json.loads((job.out / "manifest.json").read_text())
    assert manifest["devices"]["local"]["status"] == "ok"
    assert manifest["devices"]["frozen"]["status"] == "failed"
    assert (job.out / "frozen" / "tiny_mlp" / "run-1" / "etdump.etdp").is_file()


def _group(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (a step's runner: the device-side `timeout` and its child)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                pids.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return pids


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.slow
def test_sshd_killed_and_restarted_mid_run_retries_the_run(ssh_server_factory: Callable[[], object],
                                                          tmp_path: Path) -> None:
    """The link drops while run 2 is on the device and sshd comes back on the same port: the session
    reconnects, keeps its device lock, kills the runner the dropped link left running, runs run 2 again,
    and the job completes `ok` with every run and the failed try in the manifest."""
    from orchestrator.results.model import load_manifest
    from orchestrator.run.device.locks import REMOTE_LOCK_REL

    host = ssh_server_factory()
    workdir = tmp_path / "board-workdir"
    release = tmp_path / "release-run-2"
    spec = host.spec("board", workdir, exec_prefix=held_run_2(release))  # type: ignore[attr-defined]
    config = write_inventory(tmp_path / "devices.yaml", [spec])
    out = tmp_path / "run"
    job = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", "--config", str(config), "--devices", "board",
         "--model", MLP, "--backend", "portable", "--runs", "3", "--iterations", "3", "--untraced-runs", "0",
         "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    pid_file = workdir / "out" / "tiny_mlp" / "run-2.pid"
    try:
        wait_for(pid_file, timeout_s=240)  # run 2's runner is held on the device until `release`
        old = int(pid_file.read_text().strip())
        # The runner's lasting processes (the device-side `timeout` and the held shell), not the gate's short sleeps.
        leftover = [pid for pid in _group(old) if _command(pid) != "sleep"]
        assert leftover, "the runner of run 2 should be running"
        host.kill_server()  # type: ignore[attr-defined]
        time.sleep(0.3)
        assert all(_alive(pid) for pid in leftover)  # the dropped link left the runner running
        host.start_again()  # type: ignore[attr-defined]
        # When the retried step starts (a new pid in run-2.pid), nothing of the old runner may be left.
        overlap: list[int] | None = None
        deadline = time.monotonic() + 120
        while overlap is None and job.poll() is None and time.monotonic() < deadline:
            try:
                now = int(pid_file.read_text().strip() or 0)
            except (OSError, ValueError):
                now = 0
            if now and now != old:
                overlap = [pid for pid in leftover if _alive(pid)]
            time.sleep(0.01)
        release.touch()  # the retried run goes on (and a runner the session failed to kill would too)
        stdout, stderr = job.communicate(timeout=300)
    finally:
        release.touch()
        if job.poll() is None:
            job.kill()
    assert job.returncode == 0, stderr[-3000:]
    assert overlap == [], f"two runners on the device at once: {overlap}"
    device = load_manifest(out).device("board")
    assert device is not None and device.status.value == "ok", device
    model = device.model("tiny_mlp")
    assert model is not None and model.status.value == "ok"
    assert [run.label for run in model.runs] == ["run-1", "run-2", "run-3"]
    assert [a.step for a in device.attempts] == ["run tiny_mlp run-2"], device.attempts
    assert "link failed" in device.attempts[0].error
    assert "run tiny_mlp run-2 failed (try 1/3), retrying" in stderr
    stats = pd.read_csv(out / "stats.csv")
    execute = stats[stats["event_name"] == "Method::execute"]
    assert int(measured_samples(execute).iloc[0]) == 3 * 3  # the retried run counted once
    assert sorted(p.name for p in (out / "board" / "tiny_mlp" / "run-2").iterdir()) == sorted(
        Path(a).name for a in model.runs[1].artifacts)
    assert not (workdir / REMOTE_LOCK_REL).exists()  # still ours after the reconnect, released at the end


@pytest.mark.slow
def test_adb_device_daemon_restarted_mid_run_retries_the_run(adb_testdevice: object, tmp_path: Path) -> None:
    """adbd dies during run 2 (and every command it started with it) and comes back: the run is repeated
    after a reconnect and the job completes `ok` with the failed try recorded."""
    from orchestrator.results.model import load_manifest
    from orchestrator.run.device.locks import REMOTE_LOCK_REL

    workdir = Path(adb_testdevice.spec("phone").workdir)  # type: ignore[attr-defined]
    release = workdir / "release-run-2"  # on the phone's storage, which this host sees
    spec = adb_testdevice.spec("phone", exec_prefix=held_run_2(release))  # type: ignore[attr-defined]
    config = write_inventory(tmp_path / "devices.yaml", [spec])
    out = tmp_path / "run"
    job = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", "--config", str(config), "--devices", "phone",
         "--model", MLP, "--backend", "portable", "--runs", "3", "--iterations", "3", "--untraced-runs", "0",
         "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(workdir / "out" / "tiny_mlp" / "run-2.pid", timeout_s=240)  # held until `release`
        adb_testdevice.restart()  # type: ignore[attr-defined]
        release.touch()  # the restart ended the held runner; its retry goes on
        stdout, stderr = job.communicate(timeout=300)
    finally:
        release.touch()
        if job.poll() is None:
            job.kill()
    assert job.returncode == 0, stderr[-3000:]
    device = load_manifest(out).device("phone")
    assert device is not None and device.status.value == "ok", device
    model = device.model("tiny_mlp")
    assert model is not None and [run.label for run in model.runs] == ["run-1", "run-2", "run-3"]
    assert [a.step for a in device.attempts][:1] == ["run tiny_mlp run-2"], device.attempts
    stats = pd.read_csv(out / "stats.csv")
    assert int(measured_samples(stats[stats["event_name"] == "Method::execute"]).iloc[0]) == 3 * 3
    assert not (workdir / REMOTE_LOCK_REL).exists()
