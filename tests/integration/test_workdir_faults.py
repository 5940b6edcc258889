"""A workdir the device cannot write fails that device at once, in one line naming the path and the device's
own reason, on every transport; nothing waits on a lock that can never be taken (issue 31).

Real read-only file systems (read-only bind mounts: the tests run as root, where chmod stops no write)
under a local device, a real sshd's and a real adb device daemon's workdir. Before, taking the lock failed
there and etfarm read that as a lock held by "an unknown holder (lock 0 s old)", polling for ever with
no progress line; `devices check` said `health: ok`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from device_agents import DeviceSpec, create_agent
from device_agents.base import DeviceAgent
from orchestrator.base.errors import DeviceRefused
from orchestrator.emulate.adbserver import AdbTestDevice
from orchestrator.emulate.sshd import SshTestHost
from orchestrator.results.model import load_manifest
from orchestrator.run.device.locks import REMOTE_LOCK_REL, remote_lock
from tests.helpers.inventory import write_inventory

REPO = Path(__file__).resolve().parents[2]
TINY = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"
FAST = ("--backend", "portable", "--runs", "1", "--iterations", "2", "--warmup", "1", "--untraced-runs", "0")
READ_ONLY = "Read-only file system"
BAD = ("local-ro", "local-sub", "ssh-ro", "ssh-sub", "adb-ro")  # *-sub: a workdir to make inside a read-only one


def etfarm(*args: str) -> subprocess.CompletedProcess[str]:
    # Before the fix the job never ended: the timeout is the test failing, not a measurement.
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=600)


@pytest.fixture
def read_only_farm(tmp_path: Path, mounts: Callable[..., Path], sshd_host: SshTestHost,
                   adb_testdevice: AdbTestDevice) -> dict[str, DeviceSpec]:
    """A read-only workdir on each transport, workdirs to create inside one, and a good local device."""
    ro = {name: mounts(tmp_path / name) for name in ("local-ro", "ssh-ro", "adb-ro")}
    return {
        "local-ro": DeviceSpec("local-ro", "host", str(ro["local-ro"])),
        "local-sub": DeviceSpec("local-sub", "host", str(ro["local-ro"] / "sub")),
        "ssh-ro": sshd_host.spec("ssh-ro", ro["ssh-ro"]),
        "ssh-sub": sshd_host.spec("ssh-sub", ro["ssh-ro"] / "sub"),
        "adb-ro": adb_testdevice.spec("adb-ro", ro["adb-ro"]),
        "good": DeviceSpec("good", "host", str(tmp_path / "good-workdir")),
    }


def failed_lines(stderr: str, device: str) -> list[str]:
    return [line for line in stderr.splitlines() if re.match(rf"^\[ *[\d.]+s\] \[{device}\] FAILED: ", line)]


def stamp(stderr: str, device: str, what: str) -> float:
    found = re.search(rf"^\[ *([\d.]+)s\] \[{device}\] {what}", stderr, re.MULTILINE)
    assert found, stderr[-3000:]
    return float(found.group(1))


def test_a_read_only_workdir_fails_its_device_at_once_and_the_others_run(
        read_only_farm: dict[str, DeviceSpec], tmp_path: Path) -> None:
    config = write_inventory(tmp_path / "devices.yaml", list(read_only_farm.values()))
    out = tmp_path / "run"
    job = etfarm("run", "--config", str(config), "--devices", ",".join(read_only_farm), "--model", TINY, *FAST,
                 "--no-store", "--out", str(out))
    assert job.returncode == 1, job.stderr[-3000:]
    assert "waiting for the device lock" not in job.stderr and "unknown holder" not in job.stderr, job.stderr[-3000:]
    for name in BAD:
        workdir = read_only_farm[name].workdir
        lines = failed_lines(job.stderr, name)
        assert len(lines) == 1 and workdir in lines[0] and READ_ONLY in lines[0], (name, job.stderr[-3000:])
        # at once: no retries, no wait (a generous bound: the old code never ended)
        assert stamp(job.stderr, name, "FAILED") - stamp(job.stderr, name, "connecting") < 60.0
    for name in ("local-sub", "ssh-sub"):
        said = failed_lines(job.stderr, name)[0]
        assert said.endswith(f"] cannot create workdir {read_only_farm[name].workdir}: {READ_ONLY}"), said
    assert "mkdir -p" not in job.stderr and "etfarm-workdir" not in job.stderr  # the internal script stays inside

    manifest = load_manifest(out)
    for name in BAD:
        device = manifest.device(name)
        assert device is not None and device.status == "failed", device
        assert [a.step for a in device.attempts] == ["connect"], device.attempts  # one try: refused, not retried
        assert "\n" not in (device.error or "") and READ_ONLY in (device.error or ""), device.error
    good = manifest.device("good")
    assert good is not None and good.status == "ok", good
    assert "good: ok" in job.stdout

    markdown = etfarm("report", str(out), "--format", "md")
    assert markdown.returncode == 0, markdown.stderr[-3000:]
    assert "\\x0a" not in markdown.stdout and "mkdir -p" not in markdown.stdout, markdown.stdout
    said = [line for line in markdown.stdout.splitlines() if "cannot create workdir" in line]
    assert said and all(f"/sub: {READ_ONLY}" in line for line in said), said


def test_no_wait_and_devices_check_name_the_read_only_workdir(read_only_farm: dict[str, DeviceSpec],
                                                              tmp_path: Path) -> None:
    config = write_inventory(tmp_path / "devices.yaml", list(read_only_farm.values()))
    bad = ("local-ro", "ssh-ro", "adb-ro")
    job = etfarm("run", "--config", str(config), "--devices", ",".join(bad), "--model", TINY, *FAST, "--no-wait",
                 "--no-store", "--no-report", "--out", str(tmp_path / "run"))
    assert job.returncode == 1, job.stderr[-3000:]
    for name in bad:
        lines = failed_lines(job.stderr, name)
        assert len(lines) == 1 and f"workdir {read_only_farm[name].workdir} cannot be written ({READ_ONLY})" in lines[0], \
            (name, job.stderr[-3000:])
    assert "busy" not in job.stderr and "in use" not in job.stderr and "unknown holder" not in job.stderr

    for name in bad:
        check = etfarm("devices", "check", name, "--config", str(config), "--json")
        assert check.returncode == 1, (name, check.stdout, check.stderr[-3000:])
        entry = json.loads(check.stdout)
        assert entry["health"] == "offline" and entry["reachable"] is False, entry
        assert f"workdir {read_only_farm[name].workdir} cannot be written ({READ_ONLY})" in entry["error"], entry


def test_a_lock_that_cannot_be_made_fails_at_once_naming_the_path(sshd_host: SshTestHost, tmp_path: Path,
                                                                  mounts: Callable[..., Path]) -> None:
    """The lock itself, past the workdir check: the workdir turns read-only after the connection (or a
    file or a link sits where the lock goes). Each is a failure naming the lock and the reason, never a
    wait, and `--no-wait` never blames a holder."""
    workdir = tmp_path / "board"
    lock = workdir / REMOTE_LOCK_REL
    with create_agent(sshd_host.spec("board", workdir)) as agent:
        (workdir / "in-the-way").mkdir()
        lock.write_text("not a lock\n")  # a file where the lock directory goes
        with pytest.raises(DeviceRefused, match=rf"cannot take the device lock {lock}: it is a file, not a lock"):
            take(agent, timeout_s=5)
        lock.unlink()
        lock.symlink_to(workdir / "in-the-way")
        with pytest.raises(DeviceRefused, match=rf"cannot take the device lock {lock}: it is a symbolic link"):
            take(agent, timeout_s=5)
        lock.unlink()
        mounts(workdir)
        with pytest.raises(DeviceRefused, match=rf"cannot take the device lock {lock}: {READ_ONLY}"):
            take(agent, wait=False)
        with pytest.raises(DeviceRefused, match=rf"cannot take the device lock {lock}: {READ_ONLY}"):
            take(agent, timeout_s=5)


def take(agent: DeviceAgent, **options: Any) -> None:
    with remote_lock(agent, **options):
        pass
