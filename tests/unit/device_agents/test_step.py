"""device_agents.step: one process run in one device command, its framed stream checked on the host.

The step script runs for real under the host's /bin/sh (LocalAgent); a shell script stands in
for the runner, so the tests can make it write anything: awkward names, big files, garbage.
"""

from __future__ import annotations

import hashlib
import shlex
import time
from pathlib import Path

import pytest

from device_agents.base import DeviceSpec, RawExecResult
from device_agents.local import LocalAgent
from device_agents.step import STEP_REL, StepRequest, parse_frames, run_step, step_files
from orchestrator.base.errors import DeviceError

NONCE = "n0"


def _stream(*files: tuple[str, bytes], code: int = 0, big: tuple[str, ...] = ()) -> bytes:
    """A well-formed step stream: headers, exit, data, end."""
    def header(kind: str, name: str, data: bytes) -> bytes:
        return f"@@{NONCE} {kind} {name} {len(data)} {hashlib.sha256(data).hexdigest()}\n".encode()

    heads = b"".join(header("file", n, d) for n, d in files) + b"".join(header("big", n, b"xx") for n in big)
    return heads + f"@@{NONCE} exit {code}\n@@{NONCE} data\n".encode() + b"".join(d for _, d in files) + f"@@{NONCE} end\n".encode()


@pytest.fixture
def agent(tmp_path: Path) -> LocalAgent:
    agent = LocalAgent(DeviceSpec("fake-runner", "host", str(tmp_path / "work dir 'x'")))
    agent.connect()
    agent.stage(step_files())
    return agent


def _runner(agent: LocalAgent, body: str) -> str:
    path = Path(agent.remote_path("bin/fake_runner"))
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_one_command_brings_back_files_facts_and_output(agent: LocalAgent, tmp_path: Path) -> None:
    runner = _runner(agent, 'printf "\\000\\377bin" > "$1/etdump.etdp"; echo "it\'s out"; echo err >&2; exit 0\n')
    calls: list[str] = []
    original = agent._exec_raw

    def counting(command: str, timeout_s: float, max_bytes: int):  # type: ignore[no-untyped-def]
        calls.append(command)
        return original(command, timeout_s, max_bytes)

    agent._exec_raw = counting  # type: ignore[method-assign]
    out_dir = agent.remote_path("out/m/run-1")
    Path(out_dir).mkdir(parents=True)
    Path(out_dir, "stale.bin").write_bytes(b"from the last job")
    result = run_step(agent, StepRequest("out/m/run-1", [runner, out_dir], timeout_s=30), tmp_path / "dest")
    assert len(calls) == 1
    assert result.ok and result.stdout == "it's out\n" and result.stderr == "err\n"
    assert isinstance(result.facts.cores, int) and result.facts.cores >= 1
    assert set(result.files) == {"etdump.etdp"}  # the stale file was cleaned up first
    assert result.files["etdump.etdp"].read_bytes() == b"\x00\xffbin"
    assert shlex.split(result.command)[:4] == ["timeout", "-k", "5", "30"] and runner in shlex.split(result.command)


def test_runner_failure_and_device_timeout_are_reported(agent: LocalAgent, tmp_path: Path) -> None:
    failing = run_step(agent, StepRequest("out/f", [_runner(agent, "echo boom >&2; exit 3\n")], timeout_s=30), tmp_path)
    assert failing.exit_code == 3 and not failing.ok and "boom" in failing.tail()
    slow = run_step(agent, StepRequest("out/s", [_runner(agent, "sleep 30\n")], timeout_s=1), tmp_path)
    assert slow.timed_out and slow.exit_code is None and not slow.lost  # the runner's own deadline: not the link's
    assert not failing.lost


@pytest.mark.parametrize("host_deadline", [False, True])
def test_a_step_the_transport_ended_is_lost(agent: LocalAgent, tmp_path: Path, host_deadline: bool) -> None:
    """No exit status (connection dropped) or the host deadline with the device silent: the link's fault."""
    def dropped(command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
        return RawExecResult(command, None, b"", b"[etfarm] ssh channel closed without an exit status", 0.1,
                             timed_out=host_deadline)

    agent._exec_raw = dropped  # type: ignore[method-assign]
    step = run_step(agent, StepRequest("out/l", ["true"], timeout_s=30), tmp_path)
    assert step.lost and step.exit_code is None and not step.ok and step.timed_out is host_deadline
    assert "without an exit status" in step.stderr


def test_files_over_the_stream_cap_are_pulled_and_checked(agent: LocalAgent, tmp_path: Path) -> None:
    runner = _runner(agent, 'head -c 5000 /dev/urandom > "$1/big.bin"; echo small > "$1/small.txt"\n')
    out_dir = agent.remote_path("out/b")
    result = run_step(agent, StepRequest("out/b", [runner, out_dir], timeout_s=30, max_stream_file_bytes=4096),
                      tmp_path / "dest")
    assert result.pulled == ("big.bin",)
    assert result.files["big.bin"].read_bytes() == Path(out_dir, "big.bin").read_bytes()
    assert result.files["small.txt"].read_text() == "small\n"


def test_step_script_is_staged_with_the_runner(agent: LocalAgent) -> None:
    assert Path(agent.remote_path(STEP_REL)).is_file()


def test_frames_parse_in_order() -> None:
    stream = _stream((".etfarm-facts", b"cores=2\n"), ("a b.bin", b"\n@@n0 end\n"), code=7, big=("huge.bin",))
    frames = parse_frames(stream, NONCE, "dev")
    assert [(f.kind, f.name) for f in frames] == [("file", ".etfarm-facts"), ("file", "a b.bin"), ("big", "huge.bin"),
                                                  ("exit", "")]
    assert frames[1].data == b"\n@@n0 end\n" and frames[3].code == 7 and frames[2].size == 2


GOOD = _stream(("x", b"abc"))


@pytest.mark.parametrize(("stream", "message"), [
    (b"garbage\n" + GOOD, "malformed output at byte 0"),
    (GOOD.replace(b"abc@@", b"ab@@"), "does not match its sha256|unexpected bytes"),  # a byte short
    (GOOD.replace(b"abc@@", b"abcd@@"), "unexpected bytes after the files"),  # the file grew
    (GOOD.replace(b"@@n0 ", b"@@other "), "malformed output"),  # another call's nonce
    (GOOD.replace(b"abc@@", b"abd@@"), "does not match its sha256"),
    (GOOD.replace(hashlib.sha256(b"abc").hexdigest().encode(), b"0" * 63), "bad file frame"),
    (GOOD.replace(b"x 3 ", b"x 99 "), "cut short"),
    (GOOD.replace(f"@@{NONCE} exit 0\n".encode(), b""), "no exit status"),
    (f"@@{NONCE} exec rm -rf\n".encode() + GOOD, "unknown frame"),
    (GOOD[: -len(f"@@{NONCE} end\n")], "unexpected bytes"),  # the stream stopped before `end`
])
def test_malformed_streams_are_device_errors(stream: bytes, message: str) -> None:
    with pytest.raises(DeviceError, match=message):
        parse_frames(stream, NONCE, "dev")


@pytest.mark.parametrize("name", ["..", "a/b", "../../etc/x"])
def test_unsafe_names_from_the_device_are_refused(agent: LocalAgent, tmp_path: Path, name: str) -> None:
    """A hostile device controls the stream: it can claim any name; none may escape dest."""
    fake = _stream((name, b"evil"))

    def hostile(command: str, timeout_s: float, max_bytes: int):  # type: ignore[no-untyped-def]
        from device_agents.base import RawExecResult

        nonce = shlex.split(command)[2]
        return RawExecResult(command, 0, fake.replace(f"@@{NONCE} ".encode(), f"@@{nonce} ".encode()), b"", 0.0)

    agent._exec_raw = hostile  # type: ignore[method-assign]
    with pytest.raises(DeviceError, match="unsafe name|outside"):
        run_step(agent, StepRequest("out/h", ["true"], timeout_s=5), tmp_path / "dest")
    assert not (tmp_path / "evil").exists()
    assert not (tmp_path / "dest").exists() or not list((tmp_path / "dest").iterdir())


@pytest.mark.parametrize("name", ["a\\b", "e\x1b[31mvil", "tab\there", "x\ufffdy", "x" * 256])
def test_odd_names_from_the_device_are_counted_not_written(agent: LocalAgent, tmp_path: Path, name: str) -> None:
    """A name that is not plain printable text is never written; the step says how many (the caller refuses
    the run as the device's data problem)."""
    fake = _stream((name, b"evil"))

    def hostile(command: str, timeout_s: float, max_bytes: int):  # type: ignore[no-untyped-def]
        from device_agents.base import RawExecResult

        nonce = shlex.split(command)[2]
        return RawExecResult(command, 0, fake.replace(f"@@{NONCE} ".encode(), f"@@{nonce} ".encode()), b"", 0.0)

    agent._exec_raw = hostile  # type: ignore[method-assign]
    step = run_step(agent, StepRequest("out/h", ["true"], timeout_s=5), tmp_path / "dest")
    assert step.odd_names == 1 and step.files == {}
    assert not (tmp_path / "dest").exists() or not list((tmp_path / "dest").iterdir())


def test_names_the_stream_cannot_frame_are_counted_by_the_step(agent: LocalAgent, tmp_path: Path) -> None:
    """The real step script meets a newline and a backslash in names the runner left: those files are
    not framed (the stream stays whole), only counted; the plain file beside them comes back."""
    runner = _runner(agent, 'echo x > "$1/new\nline"; echo y > "$1/back\\\\slash"; echo z > "$1/plain"\n')
    out_dir = agent.remote_path("out/odd")
    result = run_step(agent, StepRequest("out/odd", [runner, out_dir], timeout_s=30), tmp_path / "dest")
    assert result.ok and result.odd_names == 2 and set(result.files) == {"plain"}


def test_the_runners_children_end_with_it(agent: LocalAgent, tmp_path: Path) -> None:
    """A runner that exits normally leaving a child in the background: the step ends the child too."""
    pid_file = tmp_path / "child.pid"
    runner = _runner(agent, f'sleep 300 >/dev/null 2>&1 & echo $! > "{pid_file}"; exit 0\n')
    result = run_step(agent, StepRequest("out/bg", [runner], timeout_s=30), tmp_path / "dest")
    assert result.ok
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the runner's background child outlived the step"


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
