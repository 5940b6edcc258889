"""AdbAgent through the real adb server and the testbed's device daemon."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import adbutils
import pytest
from testbed import agent_checks, free_port, tagged_pids

from device_agents import create_agent
from device_agents.adb import AdbAgent
from device_agents.adb.settings import AdbSettings
from device_agents.base import DeviceSpec, ExecResult
from orchestrator.base.errors import DeviceError
from orchestrator.emulate.adbserver import AdbTestDevice, AdbTestServer
from tests.helpers.waiting import eventually


def test_workflow(adb_device: DeviceSpec, tmp_path: Path) -> None:
    agent = create_agent(adb_device)
    assert isinstance(agent, AdbAgent)
    with agent:
        agent_checks.check_workflow(agent, tmp_path)


def test_awkward_names(adb_testdevice: AdbTestDevice, tmp_path: Path) -> None:
    spec = adb_testdevice.spec("awkward", adb_testdevice.root / f"work {agent_checks.AWKWARD}")
    with AdbAgent(spec) as agent:
        agent_checks.check_awkward_names(agent, tmp_path)


def test_output_without_trailing_newline_and_exit_inside(adb_device: DeviceSpec) -> None:
    with AdbAgent(adb_device) as agent:
        result = agent.run(["sh", "-c", "printf 'no newline'; exit 5"])
        assert (result.exit_code, result.stdout) == (5, "no newline")
        big = agent.run(["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' a"])
        assert big.ok and big.stdout == "a" * 3_000_000


def test_device_dying_mid_command_is_a_failure(adb_testdevice: AdbTestDevice) -> None:
    with AdbAgent(adb_testdevice.spec("dying")) as agent:
        results: list[ExecResult] = []
        worker = threading.Thread(target=lambda: results.append(agent.run(["sh", "-c", "echo started; sleep 30"], timeout_s=20)))
        worker.start()
        # the command has run its echo once its `sleep 30` runs (a fixed pause could end before a slow host starts it)
        started = eventually(lambda: not worker.is_alive()
                             or b"sleep\x0030" in _running(adb_testdevice), 60, 0.05)
        assert started and worker.is_alive(), "the command never started"
        time.sleep(3.0)  # time for the daemon to pass the echo on (the command runs 30 s)
        adb_testdevice.kill()
        worker.join(timeout=15)
        assert not worker.is_alive()
        (result,) = results
        assert result.exit_code is None and not result.ok and not result.timed_out
        assert "started" in result.stdout and "without an exit status" in result.stderr
        after = agent.run(["true"])  # the device is gone: still a failure, never a silent ''
        assert not after.ok and after.exit_code is None


def test_adbutils_shell_alone_would_have_hidden_it(adb_testdevice: AdbTestDevice) -> None:
    """Why the marker exists: plain adbutils `shell()` returns normally when the device dies."""
    device = adbutils.AdbClient(host="127.0.0.1", port=adb_testdevice.server.port).device(adb_testdevice.serial)
    killer = threading.Timer(1.0, adb_testdevice.kill)
    killer.start()
    output = device.shell("sleep 30; echo finished", timeout=20)
    killer.join()
    assert output == ""  # no exception, no exit code: indistinguishable from a quiet success


def test_missing_device_and_server_fail_clearly(adb_server: AdbTestServer, tmp_path: Path) -> None:
    spec = DeviceSpec("ghost", "host", str(tmp_path), settings=AdbSettings("NOSUCHSERIAL", adb_port=adb_server.port))
    with pytest.raises(DeviceError, match="NOSUCHSERIAL is missing"):
        AdbAgent(spec).connect()
    no_server = DeviceSpec("nosrv", "host", str(tmp_path), settings=AdbSettings("x", adb_port=free_port()))
    with pytest.raises(DeviceError, match="adb server not reachable"):
        AdbAgent(no_server).connect()
    with pytest.raises(DeviceError, match="'serial' is missing"):
        AdbAgent(DeviceSpec("emptyserial", "host", str(tmp_path), settings=AdbSettings("")))


def test_network_serial_is_connected_on_demand(adb_testdevice: AdbTestDevice, adb_server: AdbTestServer) -> None:
    adb_server.cmd("disconnect", adb_testdevice.serial)
    with AdbAgent(adb_testdevice.spec("reattached")) as agent:
        assert agent.run(["true"]).ok


def test_unreachable_network_serial_fails_fast(adb_server: AdbTestServer, tmp_path: Path) -> None:
    serial = f"127.0.0.1:{free_port()}"
    spec = DeviceSpec("gone", "host", str(tmp_path), settings=AdbSettings(serial, adb_port=adb_server.port))
    started = time.monotonic()
    with pytest.raises(DeviceError, match="is missing"):
        AdbAgent(spec).connect()
    assert time.monotonic() - started < 10


def test_host_side_deadline_closes_the_stream_and_ends_the_command(adb_testdevice: AdbTestDevice) -> None:
    with AdbAgent(adb_testdevice.spec("stuck")) as agent:
        started = time.monotonic()
        result = agent._exec("echo going; exec sleep 31", 1.0)  # the hook: no device-side `timeout`
        # well before the command's 31 s, with room for a loaded host's stall
        assert result.timed_out and result.exit_code is None and time.monotonic() - started < 15
        assert eventually(lambda: b"sleep\x0031" not in _running(adb_testdevice), 15, 0.1), \
            "the daemon did not end the abandoned command"


def _running(device: AdbTestDevice) -> bytes:
    """The command lines (NUL-separated arguments) of what runs under the test device's daemon, one per line."""
    return b"\n".join(_cmdlines(tagged_pids(device.tag)))


def _cmdlines(pids: list[int]) -> list[bytes]:
    lines = []
    for pid in pids:
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes())
        except OSError:  # it just exited
            pass
    return lines
