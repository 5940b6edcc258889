"""device_agents.base: command construction, quoting, safe pulls, facts — with a fake transport."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from device_agents.base import (
    KILL_AFTER_SEC,
    DeviceAgent,
    DeviceSpec,
    ExecResult,
    safe_destination,
)
from orchestrator.base.errors import CommandFailed, DeviceError


class FakeAgent(DeviceAgent):
    """Runs commands with the host's /bin/sh and copies files; records every call."""

    def __init__(self, spec: DeviceSpec, *, corrupt_push: bool = False, short_pull: bool = False, exit_code: int | None = None) -> None:
        super().__init__(spec)
        self.commands: list[str] = []
        self.pushed: list[str] = []
        self.corrupt_push, self.short_pull, self.forced_exit = corrupt_push, short_pull, exit_code

    def _connect(self, timeout_s: float) -> None:
        pass

    def _exec(self, command: str, timeout_s: float) -> ExecResult:
        self.commands.append(command)
        if self.forced_exit is not None:
            return ExecResult(command, self.forced_exit, "", "forced tail", 0.0)
        proc = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=timeout_s)
        return ExecResult(command, proc.returncode, proc.stdout, proc.stderr, 0.0)

    def _push(self, local: Path, remote_path: str) -> None:
        self.pushed.append(remote_path)
        data = local.read_bytes()
        Path(remote_path).write_bytes(data[:-1] + b"!" if self.corrupt_push else data)

    def _pull(self, remote_path: str, local: Path, max_bytes: int) -> None:
        data = Path(remote_path).read_bytes()
        local.write_bytes(data[:-1] if self.short_pull else data)


@pytest.fixture
def spec(tmp_path: Path) -> DeviceSpec:
    return DeviceSpec("fake", "host", str(tmp_path / "work dir; 'x'"), exec_prefix=("taskset", "-c", "4-7"))


def test_build_command_quotes_every_word_and_adds_a_deadline(spec: DeviceSpec) -> None:
    agent = FakeAgent(spec)
    argv = ["./runner", "--model", "it's a \"m\"; rm -rf /", "$HOME", "*"]
    command = agent.build_command(argv, timeout_s=9.6, env={"A": "1 2", "B": "$x"}, use_exec_prefix=True)
    assert shlex.split(command) == ["env", "A=1 2", "B=$x", "timeout", "-k", str(KILL_AFTER_SEC), "10", "taskset", "-c", "4-7", *argv]


def test_build_command_cwd_and_minimum_timeout(spec: DeviceSpec) -> None:
    agent = FakeAgent(spec)
    command = agent.build_command(["ls"], cwd="/tmp/a b;c", timeout_s=0.2)
    prefix = "cd -- '/tmp/a b;c' && "
    assert command.startswith(prefix)
    assert shlex.split(command[len(prefix) :]) == ["timeout", "-k", str(KILL_AFTER_SEC), "1", "ls"]
    assert agent.build_command(["ls"]) == "ls"  # no prefix unless asked, no deadline unless given


def test_quoted_command_round_trips_through_sh(spec: DeviceSpec, tmp_path: Path) -> None:
    agent = FakeAgent(spec)
    weird = ["it's", '"q"', "a;b", "$HOME", "`id`", "*", "", "new\nline"]
    result = agent.run(["printf", "<%s>", *weird], cwd=str(tmp_path), env={"V": "a 'b'"})
    assert result.ok and result.stdout == "".join(f"<{w}>" for w in weird)


def test_run_maps_timeout_exit_124_to_timed_out(spec: DeviceSpec) -> None:
    result = FakeAgent(spec, exit_code=124).run(["sleep", "9"], timeout_s=1)
    assert result.timed_out and result.exit_code is None and not result.ok


def test_check_raises_with_command_and_tail(spec: DeviceSpec) -> None:
    with pytest.raises(CommandFailed) as failed:
        FakeAgent(spec, exit_code=3).check(["false"])
    assert failed.value.returncode == 3 and "forced tail" in str(failed.value) and "false" in failed.value.command


@pytest.mark.parametrize("rel", ["../x", "/etc/passwd", "a/../../x", "a//b", "./a", "", "a/."])
def test_remote_path_stays_inside_the_workdir(spec: DeviceSpec, rel: str) -> None:
    with pytest.raises(DeviceError, match="workdir-relative"):
        FakeAgent(spec).remote_path(rel)


def test_stage_skips_unchanged_and_verifies_hashes(spec: DeviceSpec, tmp_path: Path) -> None:
    local = tmp_path / "m.pte"
    local.write_bytes(b"model")
    agent = FakeAgent(spec)
    agent.connect()
    assert agent.stage({"sub/m.pte": local}).bytes_pushed == 5
    assert agent.stage({"sub/m.pte": local}).pushed == ()
    assert len(agent.pushed) == 1 and agent.pushed[0].endswith(".partial")
    local.write_bytes(b"model v2")
    corrupting = FakeAgent(spec, corrupt_push=True)
    with pytest.raises(DeviceError, match="do not match their sha256"):
        corrupting.stage({"sub/m.pte": local})


def test_fetch_checks_size_and_leaves_nothing_behind(spec: DeviceSpec, tmp_path: Path) -> None:
    agent = FakeAgent(spec, short_pull=True)
    agent.connect()
    Path(spec.workdir, "out.bin").write_bytes(b"0123456789")
    dest = tmp_path / "dest"
    with pytest.raises(DeviceError, match="pulled 9 of 10 bytes"):
        agent.fetch("out.bin", dest)
    assert list(dest.iterdir()) == []
    good = FakeAgent(spec)
    with pytest.raises(DeviceError, match="over the 9-byte cap"):
        good.fetch("out.bin", dest, max_bytes=9)
    assert good.fetch("out.bin", dest, name="renamed.bin").read_bytes() == b"0123456789"


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "a\\b", "nul\0"])
def test_safe_destination_refuses_unsafe_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(DeviceError, match="unsafe name"):
        safe_destination(tmp_path, name, "dev")


def test_safe_destination_refuses_symlink_escapes(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside / "target", root / "link")
    with pytest.raises(DeviceError, match="outside"):
        safe_destination(root, "link", "dev")
    assert safe_destination(root, "it's; ok.bin", "dev") == root.resolve() / "it's; ok.bin"


def test_describe_runs_the_remote_script(spec: DeviceSpec) -> None:
    facts = FakeAgent(spec).describe()
    assert isinstance(facts.cores, int) and facts.cores >= 1 and facts.abi == os.uname().machine


def test_remote_size_tells_missing_from_unknown(spec: DeviceSpec, tmp_path: Path) -> None:
    agent = FakeAgent(spec)
    agent.connect()
    Path(agent.remote_path("here.bin")).write_bytes(b"12345")
    assert agent.remote_size("here.bin") == 5
    assert agent.remote_size("absent.bin") is None
    # Any other failure, or a lost link (no exit status at all), must never read as "no such file".
    agent.forced_exit = 255
    with pytest.raises(CommandFailed):
        agent.remote_size("here.bin")

    class LostLink(FakeAgent):
        def _exec(self, command: str, timeout_s: float) -> ExecResult:
            return ExecResult(command, None, "", "connection reset", 0.0)

    with pytest.raises(CommandFailed, match="lost the connection"):
        LostLink(spec).remote_size("here.bin")


def test_host_deadlines_are_the_docs(spec: DeviceSpec) -> None:
    """docs/how-to/boards.md: the run's --timeout for the runner, 30 s for housekeeping or a stalled transfer, plus 15 s of
    host grace. The numbers come from that page, so raising the grace in the code (or the text) fails here."""
    from device_agents.adb import AdbAgent
    from device_agents.ssh import SSHAgent
    from tests.helpers.docs_pages import fault_bounds

    bounds = fault_bounds()
    deadlines: list[float] = []

    class DeadlineAgent(FakeAgent):
        def _exec(self, command: str, timeout_s: float) -> ExecResult:
            deadlines.append(timeout_s)
            return ExecResult(command, 0, "", "", 0.0)

    agent = DeadlineAgent(spec)
    agent.run(["etfarm_runner"], timeout_s=8)  # the runner, under --timeout 8
    agent.run(["cat", "state"])  # a housekeeping command
    assert deadlines == [8 + bounds.grace_s, bounds.housekeeping_s + bounds.grace_s]
    # Every transport gives up on a transfer that stops making progress after the time docs/how-to/boards.md states.
    assert SSHAgent.STALL_TIMEOUT_SEC == AdbAgent.STALL_TIMEOUT_SEC == bounds.housekeeping_s
    assert bounds.housekeeping_s == SSHAgent.REQUEST_TIMEOUT_SEC  # one reply from sshd: as long as a stall
