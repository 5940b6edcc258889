"""The lock on the device, the workdir rules and cleanup that never follows a symlink, on a real sshd."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from device_agents import create_agent
from device_agents.step import StepRequest, run_step, step_files
from orchestrator.base.errors import DeviceRefused
from orchestrator.emulate.sshd import SshTestHost
from orchestrator.run.device import locks
from orchestrator.run.device.locks import REMOTE_LOCK_REL, remote_lock


def test_second_holder_fails_or_waits_naming_the_first(sshd_host: SshTestHost, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locks, "REMOTE_LOCK_POLL_SEC", 0.2)
    workdir = tmp_path / "board"  # one board, two inventory names
    first, second = sshd_host.spec("board-a", workdir), sshd_host.spec("board-b", workdir)
    with create_agent(first) as a, create_agent(second) as b:
        with remote_lock(a):
            assert (workdir / REMOTE_LOCK_REL / "holder").read_text().startswith(f"host={socket.gethostname()} ")
            with pytest.raises(DeviceRefused, match=r"locked by .* as device board-a"), remote_lock(b, wait=False):
                pass
            started = time.monotonic()
            with pytest.raises(DeviceRefused, match=r"gave up after 1 s .* held by .* board-a"), \
                    remote_lock(b, timeout_s=1):
                pass
            assert time.monotonic() - started < 15  # given up, not waiting for ever (a loaded host may stall 10 s)
            said: list[str] = []
            got_it = threading.Event()

            def waiter() -> None:
                with remote_lock(b, on_wait=said.append, timeout_s=30):
                    got_it.set()

            thread = threading.Thread(target=waiter)
            thread.start()
            time.sleep(1.0)
            assert not got_it.is_set()  # never interleaves: b waits while a holds the board
        thread.join(30)
        assert got_it.is_set() and any("waiting for the device lock" in s and "board-a" in s for s in said), said
    assert not (workdir / REMOTE_LOCK_REL).exists()  # released


def test_stale_locks_are_taken_over(sshd_host: SshTestHost, tmp_path: Path) -> None:
    spec = sshd_host.spec("board", tmp_path / "board")
    lock = Path(spec.workdir) / REMOTE_LOCK_REL
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with create_agent(spec) as agent:
        lock.mkdir()  # a job of this host whose process has ended
        (lock / "holder").write_text(f"host={socket.gethostname()} pid={dead.pid} user=x device=board since=t token=1\n")
        said: list[str] = []
        with remote_lock(agent, wait=False, on_wait=said.append):
            assert "stale" in said[0] and f"process {dead.pid} on this host has ended" in said[0]
        lock.mkdir()  # another host's lock, older than the bound
        (lock / "holder").write_text("host=elsewhere pid=1 user=x device=board since=t token=2\n")
        os.utime(lock, (time.time() - 7200, time.time() - 7200))
        with remote_lock(agent, wait=False, stale_s=3600, on_wait=said.append):
            assert "old (over 3600 s)" in said[-1]
        lock.mkdir()  # another host's fresh lock: not stale
        (lock / "holder").write_text("host=elsewhere pid=1 user=x device=board since=t token=3\n")
        with pytest.raises(DeviceRefused, match="x@elsewhere pid 1"), remote_lock(agent, wait=False):
            pass


def test_workdir_owned_by_another_user_or_writable_by_others_is_refused(sshd_host: SshTestHost, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(DeviceRefused, match=r"can be written by others \(mode 777\)"):
        create_agent(sshd_host.spec("board", shared)).connect()
    foreign = tmp_path / "foreign"
    foreign.mkdir(mode=0o755)
    os.chown(foreign, 65534, 65534)
    with pytest.raises(DeviceRefused, match="owned by uid 65534"):
        create_agent(sshd_host.spec("board", foreign)).connect()
    hijackable = tmp_path / "someone-elses"  # a workdir of ours inside a directory another user owns
    hijackable.mkdir(mode=0o755)
    os.chown(hijackable, 65534, 65534)
    with pytest.raises(DeviceRefused, match="others could replace the workdir"):
        create_agent(sshd_host.spec("board", hijackable / "wd")).connect()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(Exception, match="symbolic link"):
        create_agent(sshd_host.spec("board", link)).connect()


def test_cleanup_never_follows_a_symlink_planted_in_out(sshd_host: SshTestHost, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    (victim / "run-1").mkdir(parents=True)
    (victim / "run-1" / "precious").write_text("keep me")
    spec = sshd_host.spec("board", tmp_path / "wd")
    with create_agent(spec) as agent:
        agent.stage(step_files())
        (Path(spec.workdir) / "out").mkdir()
        (Path(spec.workdir) / "out" / "model").symlink_to(victim)  # out/model -> a directory not ours
        step = run_step(agent, StepRequest(out_rel="out/model/run-1", argv=["true"], timeout_s=10), tmp_path / "back")
    assert step.exit_code == 125 and "symbolic link; refusing to clean up through it" in step.stderr, step
    assert (victim / "run-1" / "precious").read_text() == "keep me"


@pytest.mark.slow
def test_two_inventory_names_for_one_board_in_one_job_never_interleave(sshd_host: SshTestHost, tmp_path: Path) -> None:
    from tests.helpers.inventory import write_inventory

    model = f"{Path(__file__).resolve().parents[2] / 'configs' / 'models' / 'tiny_mlp.py'}:build"
    workdir = tmp_path / "board"
    config = write_inventory(tmp_path / "devices.yaml", [sshd_host.spec("board-a", workdir),
                                                         sshd_host.spec("board-b", workdir)])
    job = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "run", "--config", str(config), "--devices", "board-a,board-b",
         "--model", model, "--backend", "portable", "--runs", "2", "--iterations", "2", "--untraced-runs", "0",
         "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=500)
    assert job.returncode == 0, job.stderr[-3000:]
    waited = [line for line in job.stderr.splitlines() if "] waiting for the device lock in" in line]
    assert len(waited) == 1, job.stderr[-3000:]  # the wait begins once ("still waiting" lines may follow)
    second = "board-b" if "[board-b]" in waited[0] else "board-a"
    first = "board-a" if second == "board-b" else "board-b"
    assert f"as device {first}" in waited[0]
    # Every process run of the second name started after the first name's last one: never interleaved.
    runs = [(float(m.group(1)), m.group(2)) for m in re.finditer(r"^\[ *(\d+\.\d)s\] \[(board-[ab])\] tiny_mlp: run ",
                                                             job.stderr, re.MULTILINE)]
    assert len(runs) == 4, job.stderr[-3000:]
    assert max(t for t, d in runs if d == first) <= min(t for t, d in runs if d == second), runs
    assert not (workdir / REMOTE_LOCK_REL).exists()


@pytest.mark.slow
def test_a_reset_connection_is_retried_and_recorded_in_the_manifest(sshd_host: SshTestHost, tmp_path: Path) -> None:
    from orchestrator.results.model import load_manifest
    from tests.helpers.inventory import write_inventory
    from tests.integration.testbed.delayproxy import DelayProxy

    model = f"{Path(__file__).resolve().parents[2] / 'configs' / 'models' / 'tiny_mlp.py'}:build"
    with DelayProxy(target_port=sshd_host.port, one_way_s=0.0, drop_first=1) as proxy:
        known_hosts = tmp_path / "known_hosts"
        known_hosts.write_text(f"[127.0.0.1]:{proxy.port} {sshd_host.host_key_line}\n")
        spec = sshd_host.spec("flaky", tmp_path / "wd", port=proxy.port, known_hosts=known_hosts)
        config = write_inventory(tmp_path / "devices.yaml", [spec])
        job = subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", "run", "--config", str(config), "--devices", "flaky",
             "--model", model, "--backend", "portable", "--runs", "1", "--iterations", "2", "--untraced-runs", "0",
             "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=500)
    assert job.returncode == 0, job.stderr[-3000:]
    device = load_manifest(tmp_path / "run").device("flaky")
    assert device is not None and device.status.value == "ok"
    assert [a.step for a in device.attempts] == ["connect"], device.attempts
    assert "cannot connect" in device.attempts[0].error
    assert "connect failed (try 1/3), retrying" in job.stderr


def test_the_lock_is_revalidated_after_a_reconnect(ssh_server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """sshd killed and restarted under a held lock: still ours; gone (board rebooted): taken again;
    someone else's now: refused, so the session never touches a device another job holds."""
    host = ssh_server_factory()
    spec = host.spec("board", tmp_path / "board")
    lock_dir = Path(spec.workdir) / REMOTE_LOCK_REL
    said: list[str] = []
    with create_agent(spec) as agent, remote_lock(agent, on_wait=said.append) as lock:
        mine = (lock_dir / "holder").read_text()
        host.kill_server()
        host.start_again()
        agent.reconnect()
        assert lock.revalidate() is False  # still ours: nothing lost
        assert (lock_dir / "holder").read_text() == mine and not said
        (lock_dir / "holder").unlink()
        lock_dir.rmdir()  # the board rebooted and lost its workdir's lock
        assert lock.revalidate() is True  # taken again: the caller stages again
        assert (lock_dir / "holder").read_text() == mine and "taken again" in said[-1]
        (lock_dir / "holder").write_text("host=elsewhere pid=1 user=x device=board since=t token=9\n")
        with pytest.raises(DeviceRefused, match=r"lost the device lock .* now held by x@elsewhere pid 1"):
            lock.revalidate()
    assert (lock_dir / "holder").read_text().startswith("host=elsewhere")  # never released someone else's lock


@pytest.mark.parametrize("fault", ["restarted", "down", "frozen"])
def test_after_a_link_failure_the_lock_is_released_within_the_bound(ssh_server_factory, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                    monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    import signal

    from orchestrator.base.errors import DeviceError
    from tests.integration.testbed import descendant_pids

    # "frozen" and "down" hold the bound itself (3 s: nothing answers, or nothing connects); "restarted" must reconnect
    # over SSH and release within it, which a loaded host can make take seconds: a larger bound there
    budget = 30.0 if fault == "restarted" else 3.0
    monkeypatch.setattr(locks, "REMOTE_LOCK_RELEASE_LOST_SEC", budget)
    host = ssh_server_factory()
    # a release the bound did not cut short would wait 30 s for a frozen sshd's banner: far above the limit below
    spec = host.spec("board", tmp_path / "board", connect_timeout=30)
    lock_dir = Path(spec.workdir) / REMOTE_LOCK_REL
    said: list[str] = []
    agent = create_agent(spec)
    agent.connect()
    try:
        with pytest.raises(DeviceError, match="connection lost"), remote_lock(agent, on_wait=said.append):
            if fault == "frozen":
                for pid in [host.proc.pid, *descendant_pids(host.proc.pid)]:
                    os.kill(pid, signal.SIGSTOP)
            else:
                host.kill_server()
            if fault == "restarted":
                host.start_again()
            started = time.monotonic()
            raise DeviceError("board", "connection lost")
        took = time.monotonic() - started
    finally:
        if fault == "frozen":
            for pid in [host.proc.pid, *descendant_pids(host.proc.pid)]:
                os.kill(pid, signal.SIGCONT)
        agent.close()
    assert took < budget + 10.0, took  # the bound, plus what a loaded host may stall a thread's wake-up
    if fault == "restarted":
        assert not lock_dir.exists() and "released over a new connection" in said[-1], said
    else:
        assert lock_dir.is_dir() and "could not release the device lock" in said[-1], said
        assert ("no answer within 3 s" if fault == "frozen" else "no connection") in said[-1]


@pytest.mark.slow
def test_lock_timeout_is_one_budget_for_the_host_and_the_device_lock(sshd_host: SshTestHost, tmp_path: Path) -> None:
    """The host lock is held until 15 s after the job began waiting for it, the device lock for ever:
    --lock-timeout 30 gives up 30 s after the wait began (it used to be 15 + 30), and says how much of
    it went to the host lock. 15 s apart, the two behaviours stay apart on a loaded host."""
    from tests.helpers.inventory import write_inventory

    model = f"{Path(__file__).resolve().parents[2] / 'configs' / 'models' / 'tiny_mlp.py'}:build"
    hold_s, timeout_s = 15.0, 30
    spec = sshd_host.spec("busy-board", tmp_path / "board")
    Path(spec.workdir).mkdir(mode=0o755)
    (Path(spec.workdir) / REMOTE_LOCK_REL).mkdir()  # another host's job, alive
    (Path(spec.workdir) / REMOTE_LOCK_REL / "holder").write_text("host=elsewhere pid=1 user=x device=b since=t token=1\n")
    config = write_inventory(tmp_path / "devices.yaml", [spec])
    # Holds the host lock until told on stdin: the hold is measured from the job's wait, not from a
    # start-up that a loaded machine makes slow.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom orchestrator.run.device.locks import device_lock\n"
         "with device_lock('busy-board'):\n    print('locked', flush=True)\n    sys.stdin.readline()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        job = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.cli", "run", "--config", str(config), "--devices", "busy-board",
             "--model", model, "--backend", "portable", "--runs", "1", "--iterations", "2", "--untraced-runs", "0",
             "--lock-timeout", str(timeout_s), "--out", str(tmp_path / "run")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        assert job.stderr is not None
        seen = ""
        while "waiting for the device lock held by" not in seen:
            line = job.stderr.readline()
            assert line, seen
            seen += line
        time.sleep(hold_s)
        assert holder.stdin is not None
        holder.stdin.write("release\n")
        holder.stdin.flush()
        _, rest = job.communicate(timeout=300)
        stderr = seen + rest
    finally:
        holder.kill()
        holder.wait()
    assert job.returncode == 1, stderr[-3000:]
    stamps = {what: float(m.group(1)) for what, pattern in
              (("wait", r"^\[ *(\d+\.\d)s\] \[busy-board\] waiting for the device lock held by"),
               ("connecting", r"^\[ *(\d+\.\d)s\] \[busy-board\] connecting"),
               ("gave up", r"^\[ *(\d+\.\d)s\] \[busy-board\] FAILED: .*gave up after"))
              for m in [re.search(pattern, stderr, re.MULTILINE)] if m}
    assert set(stamps) == {"wait", "connecting", "gave up"}, stderr[-3000:]
    # not before the budget (1 s: the stamps' rounding), and well before the old hold + budget (45 s)
    assert timeout_s - 1.0 <= stamps["gave up"] - stamps["wait"] < timeout_s + hold_s * 2 / 3, stamps
    said = re.search(rf"gave up after {timeout_s} s, (\d+) s of them for the host lock, waiting for the lock in workdir .* "
                     r"held by x@elsewhere", stderr)
    assert said, stderr[-3000:]
    host_wait_s = stamps["connecting"] - stamps["wait"]
    assert host_wait_s >= hold_s - 0.2, stamps  # the holder let go 15 s after the job began waiting (0.2: rounding)
    # it says what it waited (rounded to whole seconds; the stamps are printed around the wait, not at its ends)
    assert abs(int(said.group(1)) - host_wait_s) <= 2.0, (said.group(0), stamps)
