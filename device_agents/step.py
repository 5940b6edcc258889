"""One process run as one device command: cleanup, device state, the runner, its files back.

On a board behind a slow link every round trip costs; the old loop spent six device sessions
per process run (rm, mkdir, describe, the run, a stat and an SFTP read per file). Here the
whole run is one `sh` invocation of `remote/step.sh` (staged beside the runner, so the command
line stays short for old adbd): it empties the output directory, records describe.sh's facts,
runs the runner under its device-side `timeout`, and writes every file the runner left back on
the same stream, framed as `@@NONCE file NAME SIZE SHA256` + SIZE raw bytes.

The host trusts none of it: frames must carry this call's random nonce, names must be plain
(`safe_destination`) and printable (`odd_name`: a name with a newline or a backslash is not even
framed, only counted), sizes are capped per file and per stream, every file's sha256 is checked,
and files land by temp file + rename. A file over the stream cap is announced (`big`) and
pulled with `fetch` (one more round trip, still capped and hash-checked).

Measured against keeping one SFTP session per job for the pulls: benchmarks/README.md
("Run loop"). `run_step` is the one device-side step of a process run; `StepResult` its answer.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shlex
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from device_agents.base import HOST_DEADLINE_GRACE_SEC, DeviceAgent
from device_agents.emulated import emulated_facts
from device_agents.facts import DeviceFacts
from device_agents.workdir import safe_destination
from orchestrator.base.cache import sha256_file
from orchestrator.base.errors import DeviceError

STEP_REL = "bin/etfarm_step.sh"
DESCRIBE_REL = "bin/etfarm_describe.sh"
# Files up to this size come back on the step's own stream; bigger ones are pulled.
STREAM_FILE_MAX_BYTES = 64 << 20
# The whole stream is held in memory: a device that sends more is cut off.
STREAM_MAX_BYTES = 256 << 20
# Host-side allowance for cleanup, describe and the listing around the runner's own deadline.
STEP_OVERHEAD_SEC = 30.0
FACTS_NAME, STDOUT_NAME, STDERR_NAME = ".etfarm-facts", ".etfarm-stdout", ".etfarm-stderr"
_OWN = (FACTS_NAME, STDOUT_NAME, STDERR_NAME)
# What a step may still say after a frame's bytes: the next header.
_HEADER_MAX = 4096


def step_files() -> dict[str, Path]:
    """The scripts a device needs for `run_step`, to stage beside the runner (workdir-relative)."""
    remote = resources.files("device_agents").joinpath("remote")
    return {STEP_REL: Path(str(remote.joinpath("step.sh"))), DESCRIBE_REL: Path(str(remote.joinpath("describe.sh")))}


@dataclass(frozen=True)
class StepRequest:
    """One process run: where the runner writes (workdir-relative, emptied first) and how it runs."""

    out_rel: str
    argv: Sequence[str]  # the runner and its flags, absolute device paths
    timeout_s: float  # device-side deadline of the runner
    env: Mapping[str, str] = field(default_factory=dict)
    prefix: Sequence[str] = ()  # before the inventory's exec_prefix, e.g. `taskset -c 2`
    describe: bool = True  # record the device's facts just before the runner starts
    static_facts: bool = True  # with them, what never changes (os, kernel, abi, Android properties)
    max_stream_file_bytes: int = STREAM_FILE_MAX_BYTES
    persistent: bool = True  # through the job's long-lived device shell where the transport keeps one


@dataclass(frozen=True)
class StepResult:
    """How the step ended: the runner's exit and output, the facts, and the files now on the host."""

    command: str  # the runner command as the device ran it (for logs and errors)
    exit_code: int | None  # the runner's; None when the deadline or the transport ended it
    timed_out: bool
    stdout: str
    stderr: str
    facts: DeviceFacts  # empty when the request asked for none
    files: Mapping[str, Path]  # plain name -> local path, verified by size and sha256
    duration_s: float  # host wall time of the whole step
    pulled: tuple[str, ...] = ()  # names too big for the stream, fetched separately
    # The transport ended the step (connection lost, or the host deadline passed with the device
    # silent): a fault of the link, not the runner's (its own deadline is exit 124: timed_out only).
    lost: bool = False
    # Files the runner left whose names are not plain printable text (a newline, a backslash, a control
    # character, bytes that are not UTF-8): not brought back. The caller refuses the run (data, never retried).
    odd_names: int = 0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def tail(self, chars: int = 1500) -> str:
        return (self.stdout + self.stderr)[-chars:]


@dataclass(frozen=True)
class Frame:
    kind: str  # file | big | exit
    name: str = ""
    size: int = 0
    sha256: str = ""
    data: bytes = b""
    code: int | None = None


def run_step(agent: DeviceAgent, request: StepRequest, dest_dir: Path) -> StepResult:
    """Run one process run on the device in one command; its files land verified in dest_dir."""
    nonce = uuid.uuid4().hex
    words = agent.command_words(request.argv, env=request.env, timeout_s=request.timeout_s,
                                use_exec_prefix=True, prefix=request.prefix)
    runner_command = shlex.join(words)
    argv = ["sh", agent.remote_path(STEP_REL), nonce, agent.remote_path(request.out_rel), agent.spec.workdir,
            str(request.max_stream_file_bytes), _describe_mode(request), "--", *words]
    raw = agent.exec_raw(shlex.join(argv), request.timeout_s + STEP_OVERHEAD_SEC + HOST_DEADLINE_GRACE_SEC,
                         max_bytes=STREAM_MAX_BYTES, persistent=request.persistent)
    where = f"step of {request.out_rel}"
    if raw.timed_out or raw.exit_code is None:
        detail = raw.stderr.decode(errors="replace")[-1500:]
        return StepResult(runner_command, None, raw.timed_out, "", detail, {}, {}, raw.duration_s, lost=True)
    frames = parse_frames(raw.stdout, nonce, agent.spec.name, where)
    exit_code = next((f.code for f in frames if f.kind == "exit"), None)
    own: dict[str, bytes] = {}
    files: dict[str, Path] = {}
    pulled: list[str] = []
    odd = sum(f.size for f in frames if f.kind == "odd")
    for frame in frames:
        if frame.kind in ("file", "big") and odd_name(frame.name):
            odd += 1  # not written: a control character, a backslash, bytes that are not UTF-8
        elif frame.kind == "file" and frame.name in _OWN:
            own[frame.name] = frame.data
        elif frame.kind == "file":
            files[frame.name] = _write_verified(dest_dir, frame, agent.spec.name)
        elif frame.kind == "big":
            files[frame.name] = _pull_big(agent, request.out_rel, dest_dir, frame)
            pulled.append(frame.name)
    timed_out = exit_code == 124  # coreutils/toybox `timeout`: the runner had to be stopped
    return StepResult(
        command=runner_command,
        exit_code=None if timed_out else exit_code,
        timed_out=timed_out,
        stdout=own.get(STDOUT_NAME, b"").decode(errors="replace"),
        # No runner stderr (the step failed before the runner: exit 125): the step's own reason.
        stderr=own.get(STDERR_NAME, raw.stderr[-4096:]).decode(errors="replace"),
        facts=_facts(agent, own.get(FACTS_NAME, b"").decode(errors="replace")) if request.describe else DeviceFacts(),
        files=files,
        duration_s=raw.duration_s,
        pulled=tuple(pulled),
        odd_names=odd,
    )


def _facts(agent: DeviceAgent, text: str) -> DeviceFacts:
    """The step's describe.sh facts; an emulated device's machine read through its prefix (device_agents/emulated.py)."""
    facts = DeviceFacts.parse(text)
    return emulated_facts(agent, facts) if agent.spec.emulated else facts


def kill_step_command(agent: DeviceAgent, out_rel: str) -> list[str]:
    """argv that stops the runner of the step writing to `out_rel`, if it still runs.

    step.sh records the pid of the runner command in OUT.pid, started in a session of its own
    (`setsid`). Every process of that session gets SIGTERM, then SIGKILL a second later, and so
    does the process group of that pid (coreutils' `timeout` makes one; devices without setsid):
    toybox's `timeout` (Android) puts the runner in a group of its own and does not pass on the
    signals it gets, so killing `timeout` or its group alone would leave the runner running. A
    step that is just starting gets 2 s to write its pid file; nothing to do (exit 0) when the step
    has already ended."""
    script = ('i=0; while [ ! -s "$1" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done; '  # a step just starting
              'p=$(cat -- "$1" 2>/dev/null) || exit 0; [ -n "$p" ] || exit 0; '
              'for s in TERM KILL; do '
              'kill -"$s" $(pgrep -s "$p" 2>/dev/null) 2>/dev/null; '
              'kill -"$s" -- "-$p" 2>/dev/null || kill -"$s" "$p" 2>/dev/null; '
              '[ "$s" = KILL ] || sleep 1; done; rm -f -- "$1"; exit 0')
    return ["sh", "-c", script, "etfarm-kill", agent.remote_path(out_rel) + ".pid"]


def _describe_mode(request: StepRequest) -> str:
    if not request.describe:
        return "0"
    return "1" if request.static_facts else "2"


def parse_frames(stream: bytes, nonce: str, device: str, where: str = "step") -> list[Frame]:
    """The frames of a step's stream, in order; anything malformed is a DeviceError naming it.

    Headers first (`file`, `big`, `exit`), then `data` and the `file` frames' bytes back to back
    in header order, then `end`."""
    tag = f"@@{nonce} ".encode()
    headers: list[Frame] = []
    pos = 0
    while True:
        end = stream.find(b"\n", pos, pos + _HEADER_MAX)
        if not stream.startswith(tag, pos) or end < 0:
            got = stream[pos:pos + 80]
            raise DeviceError(device, f"{where}: malformed output at byte {pos} (expected a frame, got {got!r}); "
                              "the transport cut the stream or something else wrote to it")
        words = stream[pos + len(tag):end].decode(errors="replace")
        pos = end + 1
        kind, _, rest = words.partition(" ")
        if kind == "data":
            break
        if kind == "exit":
            try:
                headers.append(Frame("exit", code=int(rest)))
            except ValueError:
                raise DeviceError(device, f"{where}: bad exit frame {words!r}") from None
        elif kind in ("file", "big"):
            headers.append(Frame(kind, *_file_header(rest, device, where)))
        elif kind == "odd":
            headers.append(Frame("odd", size=int(rest) if rest.isdigit() and len(rest) < 10 else 1))
        else:
            raise DeviceError(device, f"{where}: unknown frame {words!r}")
    if not any(f.kind == "exit" for f in headers):
        raise DeviceError(device, f"{where}: the device sent no exit status")
    frames: list[Frame] = []
    for frame in headers:
        if frame.kind == "file":
            data = stream[pos:pos + frame.size]
            if len(data) != frame.size:
                raise DeviceError(device, f"{where}: {frame.name!r} was cut short ({len(data)} of {frame.size} bytes)")
            if hashlib.sha256(data).hexdigest() != frame.sha256:
                raise DeviceError(device, f"{where}: {frame.name!r} does not match its sha256 from the device")
            pos += frame.size
            frame = Frame("file", frame.name, frame.size, frame.sha256, data)
        frames.append(frame)
    if stream[pos:] != tag + b"end\n":
        raise DeviceError(device, f"{where}: {len(stream) - pos} unexpected bytes after the files "
                          f"(got {stream[pos:pos + 80]!r}); a file changed while it was sent?")
    return frames


def odd_name(name: str) -> bool:
    """A file name etfarm does not take from a device: empty, too long, or not plain printable text."""
    return (not name or len(name.encode(errors="replace")) > 255 or "\\" in name or "\ufffd" in name
            or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name))


def _file_header(rest: str, device: str, where: str) -> tuple[str, int, str]:
    name, _, tail = rest.rpartition(" ")
    name, _, size_text = name.rpartition(" ")
    try:
        size = int(size_text)
    except ValueError:
        size = -1
    if size < 0 or len(tail) != 64 or any(c not in "0123456789abcdef" for c in tail):
        raise DeviceError(device, f"{where}: bad file frame {rest[:200]!r}")
    return name, size, tail


def _write_verified(dest_dir: Path, frame: Frame, device: str) -> Path:
    """Write a frame's bytes to dest_dir/<name> atomically (plain names only)."""
    dest = safe_destination(dest_dir, frame.name, device)
    fd, tmp = tempfile.mkstemp(prefix=f".{frame.name}.", suffix=".partial", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(frame.data)
            fh.flush()
            os.fsync(fh.fileno())  # published files survive a power cut whole
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dest


def _pull_big(agent: DeviceAgent, out_rel: str, dest_dir: Path, frame: Frame) -> Path:
    safe_destination(dest_dir, frame.name, agent.spec.name)  # refuse before any transfer
    path = agent.fetch(posixpath.join(out_rel, frame.name), dest_dir, size=frame.size)
    if sha256_file(path) != frame.sha256:
        path.unlink()
        raise DeviceError(agent.spec.name, f"pulled {frame.name!r} does not match its sha256 from the device")
    return path
