"""`etfarm devices emulate`: real sshd, adb server, phone daemon and qemu, started in the foreground, used by real jobs,
and nothing of them left once a real SIGTERM or SIGINT stops the command."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from orchestrator.emulate import TAG_VAR, descendant_pids
from orchestrator.results.model import load_manifest

REPO = Path(__file__).resolve().parents[2]
TINY_CNN = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"
READY_TIMEOUT_SEC = 120.0
STOP_TIMEOUT_SEC = 60.0
TAG = re.compile(TAG_VAR.encode() + rb"=(etfarm-testbed-[0-9a-f]+)")


def etfarm(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


class Emulation:
    """`etfarm devices emulate NAMES --inventory FILE` in the background, as a user starts it beside their work."""

    def __init__(self, names: list[str], tmp: Path) -> None:
        self.inventory = tmp / "fleet.yaml"
        self.log = (tmp / "emulate.out").open("w")
        self.proc = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "devices", "emulate", *names,
                                      "--inventory", str(self.inventory)],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        self.tmp = tmp

    def ready(self) -> dict:
        deadline = time.monotonic() + READY_TIMEOUT_SEC
        while not self.inventory.exists():
            assert self.proc.poll() is None, self.output()
            assert time.monotonic() < deadline, f"no inventory after {READY_TIMEOUT_SEC} s: {self.output()}"
            time.sleep(0.2)
        return yaml.safe_load(self.inventory.read_text())

    def started(self, root: str) -> set[int]:
        """Every process it started: its descendants; whatever names its folder `root` in its command line or
        environment (sshd's keys, the phone daemon's root, the adb server's HOME: it detaches itself); and whatever
        carries one of their tags (sshd sessions, the phone's shells, runners under qemu)."""
        ours = set(descendant_pids(self.proc.pid))
        texts = {int(e.name): _cmdline(int(e.name)).encode() + b"\0" + _environ(int(e.name))
                 for e in Path("/proc").iterdir() if e.name.isdigit()}
        ours |= {pid for pid, t in texts.items() if root.encode() in t}
        tags = {tag for pid in ours for tag in TAG.findall(texts.get(pid, b""))}
        return ours | {pid for pid, t in texts.items() if set(TAG.findall(t)) & tags}

    def stop(self, sig: signal.Signals) -> int:
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=STOP_TIMEOUT_SEC)
        self.log.close()
        return code

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return (self.tmp / "emulate.out").read_text()

    def kill(self) -> None:
        """After a failed assertion: stop it the way a user does (its peers run in sessions of their own)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_SEC)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def _root(inventory: dict) -> str:
    """The folder `devices emulate` keeps its devices' files in (keys, workdirs, the phone's root)."""
    return str(Path(inventory["devices"]["rpi5"]["key"]).parents[2])


def _ports(inventory: dict) -> list[int]:
    ports = []
    for entry in inventory["devices"].values():
        ports.append(entry["port"] if entry["transport"] == "ssh" else int(entry["serial"].rsplit(":", 1)[1]))
        if entry["transport"] == "adb":
            ports.append(entry["adb_port"])
    return ports


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _assert_nothing_left(pids: set[int], inventory: dict, tmp: Path) -> None:
    deadline = time.monotonic() + 10.0
    alive = {p for p in pids if Path(f"/proc/{p}").exists()}
    while alive and time.monotonic() < deadline:  # a killed process is reaped by init a moment later
        time.sleep(0.1)
        alive = {p for p in alive if Path(f"/proc/{p}").exists() and "Z" not in _state(p)}
    assert not alive, {p: _cmdline(p) for p in alive}
    assert not [p for p in _ports(inventory) if _listening(p)]
    root = _root(inventory)
    assert root not in Path("/proc/mounts").read_text() and not Path(root).exists()
    assert not (tmp / "fleet.yaml").exists()  # the inventory names dead ports once stopped: it goes too


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"


@pytest.mark.slow
def test_two_jobs_on_the_emulated_fleet_then_sigterm_leaves_nothing(tmp_path: Path) -> None:
    emulation = Emulation(["rpi5", "pixel8"], tmp_path)
    try:
        inventory = emulation.ready()
        assert set(inventory["devices"]) == {"rpi5", "pixel8"}
        assert all(entry["emulated"] is True for entry in inventory["devices"].values())
        assert inventory["devices"]["rpi5"]["exec_prefix"][1:3] == ["-cpu", "cortex-a76"]
        assert f"etfarm run --config {emulation.inventory} --devices rpi5,pixel8" in emulation.output()
        env = {**os.environ, "ETFARM_STORE": str(tmp_path / "store.db")}
        for k in (1, 2):
            out = tmp_path / f"job{k}"
            job = etfarm("run", "--config", str(emulation.inventory), "--devices", "rpi5,pixel8", "--model", TINY_CNN,
                         "--runs", "1", "--iterations", "2", "--warmup", "0", "--untraced-runs", "0", "--out", str(out),
                         env=env, timeout=900)
            assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
            manifest = load_manifest(out)
            assert {(d.name, d.status.value, d.emulated) for d in manifest.devices} == {
                ("rpi5", "ok", True), ("pixel8", "ok", True)}
            assert manifest.device("pixel8").facts.android.model == "Pixel 8"  # type: ignore[union-attr]
            # describe.sh ran on this x86_64 host for both: each one's machine is its own (qemu's uname, busybox's)
            assert {d.name: d.facts.abi for d in manifest.devices} == {"rpi5": "aarch64", "pixel8": "aarch64"}
        pids = emulation.started(_root(inventory))
        commands = " ".join(_cmdline(p) for p in pids)
        assert "sshd" in commands and "fork-server" in commands and "adb_daemon.py" in commands, commands
        assert emulation.stop(signal.SIGTERM) == 0, emulation.output()
        assert "nothing left running" in emulation.output()
        _assert_nothing_left(pids, inventory, tmp_path)
    finally:
        emulation.kill()


def test_sigint_stops_the_fleet_and_leaves_nothing(tmp_path: Path) -> None:
    emulation = Emulation(["rpi5", "pixel8"], tmp_path)
    try:
        inventory = emulation.ready()
        # the phone's aarch64 programs run on qemu's Cortex-A76, never its default `max` CPU (wrong int8, slow SVE)
        assert "cortex-a76" in " ".join(inventory["devices"]["pixel8"]["exec_prefix"])
        listing = etfarm("devices", "--json", "--config", str(emulation.inventory))
        assert listing.returncode == 0, listing.stderr
        entries = {e["name"]: e for e in json.loads(listing.stdout)["devices"]}
        assert entries["rpi5"]["reachable"] and entries["pixel8"]["reachable"], entries
        pids = emulation.started(_root(inventory))
        commands = " ".join(_cmdline(p) for p in pids)
        assert "sshd" in commands and "fork-server" in commands and "adb_daemon.py" in commands, commands
        assert emulation.stop(signal.SIGINT) == 0, emulation.output()
        _assert_nothing_left(pids, inventory, tmp_path)
    finally:
        emulation.kill()


def test_unknown_name_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = etfarm("devices", "emulate", "rpi5", "iphone", "--inventory", str(tmp_path / "fleet.yaml"))
    assert result.returncode == 2
    assert result.stderr.strip() == "error: cannot emulate 'iphone'; emulated devices: rpi5, rpi4, pixel8"
    assert not (tmp_path / "fleet.yaml").exists()
