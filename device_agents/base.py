"""The device workflow, shared by every transport.

A `DeviceSpec` is data (what the inventory says); a `DeviceAgent` drives one
device. The base class owns the workflow — quoting, device-side deadlines,
hash-checked staging, safe pulls, device facts — and a transport fills four
hooks: `_connect`, `_exec` (run a /bin/sh command string), `_push`, `_pull`.
"""

from __future__ import annotations

import logging
import os
import posixpath
import shlex
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

from orchestrator.cache import sha256_file
from orchestrator.cleanup import close_quietly
from orchestrator.errors import CommandFailed, DeviceError, DeviceRefused
from orchestrator.procs import CommandResult

# Grace between the device-side `timeout` and the host giving up on the transport (README: 15 s).
HOST_DEADLINE_GRACE_SEC = 15.0
# A transfer or command socket that makes no progress this long is a dead or frozen device, not a
# slow one (README: 30 s, as housekeeping commands). One value for every transport.
STALL_TIMEOUT_SEC = 30.0
# SIGTERM first; SIGKILL this long after, for a runner that ignores TERM.
KILL_AFTER_SEC = 5
# Staging's sha256 pass gets COMMAND_TIMEOUT_SEC plus the time to hash its bytes at this rate
# (a slow board's sha256sum does ~50 MB/s; a quarter of that leaves room for a busy one).
HASH_BYTES_PER_SEC = 12_000_000
# Checks the workdir before anything is staged (argument: the workdir).
# Prints "UID MODE PARENT_UID PARENT_MODE OUR_UID" (modes in octal).
_WORKDIR_CHECK = ('w=$1; mkdir -p -m 700 -- "$w" || exit 3; '
                  'if [ -L "$w" ]; then echo "is a symbolic link" >&2; exit 4; fi; '
                  'printf "%s %s %s\\n" "$(stat -c "%u %a" -- "$w")" "$(stat -c "%u %a" -- "$(dirname -- "$w")")" "$(id -u)"')


@dataclass(frozen=True)
class DeviceSpec:
    """One device as the inventory describes it. Transport-specific keys live in `settings`."""

    name: str
    transport: str
    target: str
    workdir: str
    exec_prefix: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    source: str = "<built-in>"


# Device commands end the same way host commands do.
ExecResult = CommandResult


@dataclass(frozen=True)
class RawExecResult:
    """A device command's end with its output as bytes (for binary streams: run_step's frames)."""

    command: str
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    duration_s: float
    timed_out: bool = False

    def decoded(self) -> ExecResult:
        return ExecResult(self.command, self.exit_code, self.stdout.decode(errors="replace"),
                          self.stderr.decode(errors="replace"), self.duration_s, self.timed_out)


@dataclass(frozen=True)
class StageReport:
    pushed: tuple[str, ...]
    skipped: tuple[str, ...]
    bytes_pushed: int


class DeviceAgent(ABC):
    """Drives one device. Use as a context manager: connect on enter, close on exit."""

    transport: ClassVar[str]
    CONNECT_TIMEOUT_SEC: ClassVar[float] = 15.0
    # Housekeeping (mkdir, stat, describe) takes well under a second; more means a stuck device.
    COMMAND_TIMEOUT_SEC: ClassVar[float] = 30.0
    PUSH_TIMEOUT_SEC: ClassVar[float] = 600.0
    MAX_PULL_BYTES: ClassVar[int] = 2 << 30
    # Output a housekeeping command may send; a device sending more is cut off (host memory).
    MAX_OUTPUT_BYTES: ClassVar[int] = 64 << 20

    def __init__(self, spec: DeviceSpec) -> None:
        self.spec = spec
        self.log = logging.getLogger(f"etfarm.device.{spec.name}")

    # ---- lifecycle -------------------------------------------------------------

    def connect(self) -> None:
        self._connect(self.CONNECT_TIMEOUT_SEC)
        self._check_workdir()

    def close(self) -> None:
        """Close the connection. Never raises: after a fault the link may be dead already, and the
        error the user must see is the fault, not a failed close (orchestrator/cleanup.py)."""
        close_quietly(f"the connection to {self.spec.name}", self._close, self.log)

    def reconnect(self) -> None:
        """Drop whatever is left of the connection and connect again (before retrying a step)."""
        self.close()
        self.connect()

    def _check_workdir(self) -> None:
        """Create the workdir if needed and refuse one that is a symlink, that the device user
        does not own, or that others can write: on a multi-user board anyone who can write it
        could swap the runner between the hash check and its execution."""
        workdir = self.spec.workdir
        result = self.check(["sh", "-c", _WORKDIR_CHECK, "etfarm-workdir", workdir], persistent=True)
        fields = result.stdout.split()
        if len(fields) != 5 or not all(f.isdigit() for f in fields):
            raise DeviceError(self.spec.name, f"could not read the owner and mode of workdir {workdir}: "
                                              f"{result.stdout.strip()[:200]!r}")
        owner, mode, parent_owner, parent_mode, uid = (int(f, 8) if i in (1, 3) else int(f) for i, f in enumerate(fields))
        if owner != uid:
            raise DeviceRefused(self.spec.name, f"workdir {workdir} is owned by uid {owner}, not by the device user "
                                                f"(uid {uid}); refusing to use it: set another `workdir` in the inventory")
        if mode & 0o022:
            raise DeviceRefused(self.spec.name, f"workdir {workdir} can be written by others (mode {mode:o}); refusing "
                                                f"to use it: `chmod go-w {workdir}` on the device or set another `workdir`")
        # Whoever may rename entries of the parent can swap the whole workdir: it must be ours or
        # root's, and not writable by everyone unless sticky (/tmp).
        if parent_owner not in (uid, 0) or (parent_mode & 0o002 and not parent_mode & 0o1000):
            raise DeviceRefused(self.spec.name, f"the directory holding workdir {workdir} belongs to uid {parent_owner} "
                                                f"(mode {parent_mode:o}): others could replace the workdir; refusing "
                                                "to use it: set another `workdir` in the inventory")

    def __enter__(self) -> DeviceAgent:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- commands --------------------------------------------------------------

    def remote_path(self, rel: str) -> str:
        """Absolute device path of `rel` inside the workdir; `rel` must stay inside it."""
        _check_relative(rel, self.spec.name)
        return posixpath.join(self.spec.workdir, rel)

    def command_words(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        use_exec_prefix: bool = False,
        prefix: Sequence[str] = (),
    ) -> list[str]:
        """argv behind `env`, the device-side deadline, `prefix` (e.g. taskset) and the exec_prefix."""
        words: list[str] = []
        if env:
            words += ["env"] + [f"{key}={value}" for key, value in env.items()]
        if timeout_s is not None:
            words += ["timeout", "-k", str(KILL_AFTER_SEC), str(max(1, int(round(timeout_s))))]
        words += list(prefix)
        if use_exec_prefix:
            words += list(self.spec.exec_prefix)
        return words + list(argv)

    def build_command(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        use_exec_prefix: bool = False,
    ) -> str:
        """The /bin/sh command line for argv: every word quoted, a device-side deadline."""
        command = shlex.join(self.command_words(argv, env=env, timeout_s=timeout_s, use_exec_prefix=use_exec_prefix))
        if cwd is not None:
            command = f"cd -- {shlex.quote(cwd)} && {command}"
        return command

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        use_exec_prefix: bool = False,
        persistent: bool = False,
    ) -> ExecResult:
        """Run argv on the device with a device-side deadline; returns the real exit code.

        `persistent`: through the job's long-lived device shell where the transport keeps one."""
        timeout_s = self.COMMAND_TIMEOUT_SEC if timeout_s is None else timeout_s
        command = self.build_command(argv, cwd=cwd, env=env, timeout_s=timeout_s, use_exec_prefix=use_exec_prefix)
        self.log.debug("exec: %s", command)
        if persistent:
            result = self._exec_persistent(command, timeout_s + HOST_DEADLINE_GRACE_SEC, self.MAX_OUTPUT_BYTES).decoded()
        else:
            result = self._exec(command, timeout_s + HOST_DEADLINE_GRACE_SEC)
        # coreutils/toybox `timeout` exits 124 when it had to stop the command.
        if result.exit_code == 124:
            result = ExecResult(command, None, result.stdout, result.stderr, result.duration_s, timed_out=True)
        return result

    def exec_raw(self, command: str, timeout_s: float, max_bytes: int | None = None,
                 persistent: bool = False) -> RawExecResult:
        """Run a prepared /bin/sh command string; output as bytes, at most max_bytes of stdout.

        `persistent`: through the job's long-lived device shell where the transport keeps one
        (ssh: one session per job instead of one per command); the command must not read stdin."""
        self.log.debug("exec: %s", command[:2000])
        cap = self.MAX_OUTPUT_BYTES if max_bytes is None else max_bytes
        if persistent:
            return self._exec_persistent(command, timeout_s, cap)
        return self._exec_raw(command, timeout_s, cap)

    def check(self, argv: Sequence[str], **kwargs: Any) -> ExecResult:
        """`run`, raising CommandFailed unless the command exits 0."""
        result = self.run(argv, **kwargs)
        if not result.ok:
            raise CommandFailed(self.spec.name, result.command, result.exit_code, result.tail(), result.timed_out)
        return result

    # ---- files -----------------------------------------------------------------

    def stage(self, files: Mapping[str, Path]) -> StageReport:
        """Make workdir/<rel> equal to each local file; unchanged files are not sent.

        Files already on the device with the same sha256 are skipped; every
        pushed file is checked by sha256 afterwards. Two device commands in all,
        whatever the number of files: round trips dominate on slow links.
        """
        dirs = sorted({posixpath.dirname(self.remote_path(rel)) for rel in files})
        with ThreadPoolExecutor(max_workers=1) as pool:  # hash locally while the device hashes
            local_future = pool.submit(lambda: {rel: sha256_file(path) for rel, path in files.items()})
            nbytes = sum(path.stat().st_size for path in files.values())
            remote_hashes = self._run_then_hash([["mkdir", "-p", "--", *dirs]], list(files), nbytes)
            local_hashes = local_future.result()
        to_push = [rel for rel in files if remote_hashes.get(rel) != local_hashes[rel]]
        finalize: list[list[str]] = []
        pushed_bytes = 0
        for rel in to_push:
            local, final = files[rel], self.remote_path(rel)
            partial = f"{final}.partial"  # renamed into place only when complete
            self._push(local, partial)
            mode = "755" if os.access(local, os.X_OK) else "644"
            finalize += [["chmod", mode, "--", partial], ["mv", "-f", "--", partial, final]]
            pushed_bytes += local.stat().st_size
        if to_push:
            after = self._run_then_hash(finalize, to_push, pushed_bytes)
            bad = [rel for rel in to_push if after.get(rel) != local_hashes[rel]]
            if bad:
                raise DeviceError(self.spec.name, f"pushed files do not match their sha256 on the device: {', '.join(bad)}")
        skipped = tuple(rel for rel in files if rel not in to_push)
        return StageReport(pushed=tuple(to_push), skipped=skipped, bytes_pushed=pushed_bytes)

    def remote_sha256(self, rels: Sequence[str], nbytes: int = 0) -> dict[str, str]:
        """sha256 of each workdir-relative file that exists on the device (`nbytes`: about their size)."""
        return self._run_then_hash([], rels, nbytes)

    def hash_timeout_s(self, nbytes: int) -> float:
        """Deadline of a sha256 pass over nbytes on the device: scaled with the size, never unbounded."""
        return self.COMMAND_TIMEOUT_SEC + nbytes / HASH_BYTES_PER_SEC

    def _run_then_hash(self, steps: Sequence[Sequence[str]], rels: Sequence[str], nbytes: int = 0) -> dict[str, str]:
        """Run each argv step (stopping at the first failure), then sha256sum the files, in one command."""
        if not rels:
            if steps:
                self.check(["sh", "-c", " && ".join(shlex.join(step) for step in steps)], persistent=True)
            return {}
        paths = {self.remote_path(rel): rel for rel in rels}
        # Missing files make sha256sum exit 1; the lines of the present ones are still the answer.
        hashing = f"{{ {shlex.join(['sha256sum', '--', *paths])} || true; }}"
        script = " && ".join([*(shlex.join(step) for step in steps), hashing])
        result = self.check(["sh", "-c", script], timeout_s=self.hash_timeout_s(nbytes), persistent=True)
        hashes: dict[str, str] = {}
        for line in result.stdout.splitlines():
            digest, _, path = line.partition("  ")
            if path in paths and len(digest) == 64:
                hashes[paths[path]] = digest
        return hashes

    def fetch(self, rel: str, dest_dir: Path, name: str | None = None, max_bytes: int | None = None,
              size: int | None = None) -> Path:
        """Copy workdir/<rel> to dest_dir/<name> safely: plain name, size cap, temp file + rename.

        `size`: the size the device already announced (run_step's listing), saving a `stat` round trip."""
        name = name or posixpath.basename(rel)
        dest = safe_destination(dest_dir, name, self.spec.name)
        cap = self.MAX_PULL_BYTES if max_bytes is None else max_bytes
        size = self.remote_size(rel) if size is None else size
        if size is None:
            raise DeviceError(self.spec.name, f"no such file on the device: {self.remote_path(rel)}")
        if size > cap:
            raise DeviceRefused(self.spec.name, f"{self.remote_path(rel)} is {size} bytes, over the {cap}-byte cap")
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=dest.parent)
        os.close(fd)
        try:
            self._pull(self.remote_path(rel), Path(tmp), cap)
            got = Path(tmp).stat().st_size
            if got != size:
                raise DeviceError(self.spec.name, f"pulled {got} of {size} bytes of {self.remote_path(rel)}")
            os.replace(tmp, dest)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return dest

    def remote_size(self, rel: str) -> int | None:
        """Size of workdir/<rel>; None only when the device says there is no such file."""
        result = self.run(["stat", "-c", "%s", "--", self.remote_path(rel)])
        if result.ok:
            try:
                return int(result.stdout.strip())
            except ValueError:
                pass
        elif result.exit_code == 1:  # stat's answer for a missing file (GNU and toybox alike)
            return None
        # Anything else (a lost link, a deadline, garbage) must not pass for "missing".
        raise CommandFailed(self.spec.name, result.command, result.exit_code, result.tail(), result.timed_out)

    def remove(self, rel: str) -> None:
        self.check(["rm", "-rf", "--", self.remote_path(rel)])

    # ---- facts -----------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """What the device is right now: abi, cores, cpufreq, governors, temperatures, load."""
        script = resources.files("device_agents").joinpath("remote/describe.sh").read_text()
        result = self.run(["sh", "-c", script], persistent=True)
        if not result.ok:
            raise CommandFailed(self.spec.name, "describe.sh", result.exit_code, result.tail(), result.timed_out)
        return parse_facts(result.stdout)

    # ---- transport hooks ---------------------------------------------------------

    @abstractmethod
    def _connect(self, timeout_s: float) -> None: ...

    def _exec(self, command: str, timeout_s: float) -> ExecResult:
        """Run a /bin/sh command string on the device; never trust a missing exit code.

        A transport implements this or `_exec_raw` (bytes, for binary streams); each defaults to the other."""
        return self._exec_raw(command, timeout_s, self.MAX_OUTPUT_BYTES).decoded()

    def _exec_raw(self, command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
        if type(self)._exec is DeviceAgent._exec:
            raise NotImplementedError(f"{type(self).__name__} implements neither _exec nor _exec_raw")
        result = self._exec(command, timeout_s)  # text transports (test fakes): lossy for binary output
        return RawExecResult(command, result.exit_code, result.stdout.encode(), result.stderr.encode(),
                             result.duration_s, result.timed_out)

    def _exec_persistent(self, command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
        """`_exec_raw` through a shell kept open for the job; transports without one run it alone."""
        return self._exec_raw(command, timeout_s, max_bytes)

    @abstractmethod
    def _push(self, local: Path, remote_path: str) -> None: ...

    @abstractmethod
    def _pull(self, remote_path: str, local: Path, max_bytes: int) -> None: ...

    def _close(self) -> None:  # noqa: B027 - an optional hook: most transports hold nothing to close
        pass


def parse_facts(text: str) -> dict[str, Any]:
    """Parse describe.sh output: `key=value` lines; `a.b.c=v` nests; numbers become numbers."""
    facts: dict[str, Any] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep or not key:
            continue
        node = facts
        *parents, leaf = key.strip().split(".")
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[leaf] = _number_or_text(value.strip())
    return facts


def _number_or_text(value: str) -> Any:
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def safe_destination(dest_dir: Path, name: str, device: str) -> Path:
    """dest_dir/name, refusing names that are not plain or that resolve outside dest_dir."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise DeviceRefused(device, f"refusing to write pulled file with unsafe name {name!r}")
    root = dest_dir.resolve()
    dest = (root / name).resolve()
    if dest.parent != root:
        raise DeviceRefused(device, f"refusing pulled file {name!r}: it resolves outside {root}")
    root.mkdir(parents=True, exist_ok=True)
    return dest


def _check_relative(rel: str, device: str) -> None:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise DeviceRefused(device, f"workdir-relative path expected, got {rel!r}")


