"""Device locks: two etfarm runs (or a scripted human) never share a device.

Two locks, both held for a session. `device_lock`: a host file lock per inventory name (cheap, no
device needed). `remote_lock`: a lock directory in the device's workdir recording host, pid, user
and time, so two hosts, two caches or two inventory names for one board cannot interleave either;
a holder whose process on this host has ended, or a lock older than REMOTE_LOCK_STALE_SEC, is
taken over. --lock-timeout is one budget for both waits: the remote lock gets what the host lock
left of it (`device_lock` yields the seconds it waited; `budget_left`). A wait says who holds the
lock and for how long when it begins and every LOCK_WAIT_REPORT_SEC (`LockWait`). Only another
holder is waited for: a lock that cannot be made at all (a read-only or full workdir, a file or a
link in its place, a host lock file the cache cannot hold) fails the device at once, in one line
naming the path and the reason.

A link that fails while the lock is held does not end the session's claim: after a reconnect
`RemoteLock.revalidate` checks that the lock still names this holder (re-taking it if the board
lost it, e.g. a reboot wiped the workdir; refusing if someone else holds it now). When the session
ends after a link failure, releasing is tried once more over a new connection, bounded by
REMOTE_LOCK_RELEASE_LOST_SEC; a lock that still cannot be released goes stale (taken over once
this process has ended, or after REMOTE_LOCK_STALE_SEC from another host).
"""

from __future__ import annotations

import fcntl
import getpass
import logging
import os
import shlex
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from device_agents.base import DeviceAgent
from device_agents.workdir import device_reason
from orchestrator.base.cache import cache_dir
from orchestrator.base.errors import DeviceError, DeviceRefused, EtfarmError, one_line
from orchestrator.run.device.retry import retryable

log = logging.getLogger(__name__)

LOCK_POLL_SEC = 0.5
# A wait for another job's lock says so when it begins, when the holder changes and this often
# between: who holds it, for how long, and how long this job has waited (a nightly never waits mute).
LOCK_WAIT_REPORT_SEC = 30.0


class LockWait:
    """One wait for a lock held by another job: bounded by `timeout_s` (None: until the holder lets go),
    reported through `on_wait` when it begins, when the holder changes and every LOCK_WAIT_REPORT_SEC."""

    def __init__(self, on_wait: Callable[[str], None], timeout_s: float | None) -> None:
        self.on_wait = on_wait
        self.started = time.monotonic()
        self.deadline = None if timeout_s is None else self.started + timeout_s
        self._holder: str | None = None
        self._said_at = 0.0

    @property
    def waited_s(self) -> float:
        return time.monotonic() - self.started

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def report(self, holder: str, what: str) -> None:
        """`what` ("the device lock in W held by X for N s"), said when due; `holder` tells a new holder."""
        now = time.monotonic()
        if holder == self._holder and now - self._said_at < LOCK_WAIT_REPORT_SEC:
            return
        first = self._holder is None
        self._holder, self._said_at = holder, now
        if first:
            self.on_wait(f"waiting for {what}")
        else:
            left = "" if self.deadline is None else f", giving up in {max(0.0, self.deadline - now):.0f} s"
            self.on_wait(f"still waiting ({self.waited_s:.0f} s so far{left}) for {what}")

    def sleep(self, poll_s: float) -> None:
        """At most `poll_s`, never past the deadline."""
        time.sleep(poll_s if self.deadline is None else max(0.0, min(poll_s, self.deadline - time.monotonic())))


@contextmanager
def device_lock(device: str, *, wait: bool = True, on_wait: Callable[[str], None] = lambda s: None,
                timeout_s: float | None = None) -> Iterator[float]:
    """Hold the device's lock for the block; yields the seconds spent waiting for it.
    Busy: wait (telling on_wait who holds it) or fail. A lock file that cannot be made or written (the
    cache on a read-only or full disk) fails the device at once, naming the file."""
    path = cache_dir("locks") / f"{device}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise DeviceRefused(device, f"cannot open the host lock {path}: {exc.strerror or exc}") from exc
    started = time.monotonic()
    try:
        if not _try_lock(fd):
            _wait_for_host_lock(device, fd, wait, LockWait(on_wait, timeout_s), timeout_s)
        try:
            os.ftruncate(fd, 0)
            holder = f"pid {os.getpid()} of {getpass.getuser()}@{socket.gethostname()} since {time.strftime('%H:%M:%S')}"
            os.pwrite(fd, holder.encode(), 0)
        except OSError as exc:
            raise DeviceRefused(device, f"cannot write the host lock {path}: {exc.strerror or exc}") from exc
        yield time.monotonic() - started
    finally:
        os.close(fd)  # closing releases the flock


def _wait_for_host_lock(device: str, fd: int, wait: bool, waiting: LockWait, timeout_s: float | None) -> None:
    while True:
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
        if not wait:
            raise DeviceError(device, f"device is busy: locked by {holder} (drop --no-wait to wait for it)")
        if waiting.expired():
            raise DeviceError(device, f"gave up after {timeout_s:g} s waiting for the device lock held by {holder} "
                                      f"(--lock-timeout)")
        held_s = max(0.0, time.time() - os.fstat(fd).st_mtime)  # the holder wrote its line when it took the lock
        waiting.report(holder, f"the device lock held by {holder} for {held_s:.0f} s")
        waiting.sleep(LOCK_POLL_SEC)
        if _try_lock(fd):
            return


def budget_left(timeout_s: float | None, waited_s: float) -> float | None:
    """What --lock-timeout leaves for the next lock after `waited_s` on the previous one (None: no bound)."""
    return None if timeout_s is None else max(0.0, timeout_s - waited_s)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


# ---- the lock on the device itself -----------------------------------------------------------

# A directory in the workdir: `mkdir` is atomic on every file system and in toybox alike.
REMOTE_LOCK_REL = ".etfarm-lock"
# A lock older than this is taken over whatever its holder says (a job of a host that is gone).
REMOTE_LOCK_STALE_SEC = 12 * 3600.0
# A lock directory without its holder line this old is a taker that died between the two writes.
REMOTE_LOCK_HALF_TAKEN_SEC = 60.0
REMOTE_LOCK_POLL_SEC = 2.0  # each poll is a device command
# Releasing is one small command. After the link failed it is tried over a new connection, all of
# it (connect, workdir check, the command) within REMOTE_LOCK_RELEASE_LOST_SEC, so a frozen device
# adds at most that to the job; a lock still held then goes stale, taken over once this process
# has ended, or after REMOTE_LOCK_STALE_SEC from another host.
REMOTE_LOCK_RELEASE_SEC = 30.0
REMOTE_LOCK_RELEASE_LOST_SEC = 10.0
# Take the lock (arguments: its path, our holder line). Answers TAKEN; HELD <age s> <holder line>; or
# FAILED <why> when the lock cannot be made for any reason but another holder: a read-only or full
# workdir (mkdir's own words), a link or a file in its place. A lock let go between our `mkdir` and the
# look at it is tried once more, so a release in that instant is never taken for a failure.
_TAKE_BODY = ('for try in 1 2; do '
              'if [ -L "$d" ]; then echo "FAILED it is a symbolic link, not a lock"; exit 0; fi; '
              'if e=$(mkdir -- "$d" 2>&1); then '
              'if e=$( (printf "%s\\n" "$me" >"$d/holder") 2>&1); then echo TAKEN; exit 0; fi; '
              'rm -f -- "$d/holder"; rmdir -- "$d"; break; fi; '
              'if [ -d "$d" ]; then now=$(date +%s); since=$(stat -c %Y -- "$d" 2>/dev/null || echo "$now"); '
              'printf "HELD %s %s\\n" "$((now - since))" "$(head -c 300 -- "$d/holder" 2>/dev/null)"; exit 0; fi; '
              'if [ -e "$d" ]; then echo "FAILED it is a file, not a lock"; exit 0; fi; '
              'done; printf "FAILED %s\\n" "$e" | head -n 1')
_TAKE = 'd=$1 me=$2; ' + _TAKE_BODY
# Whether the lock still names `$2` (OURS), or else as _TAKE: gone and taken again (TAKEN), another's (HELD ...).
_CHECK = ('d=$1 me=$2; if [ ! -L "$d" ] && [ "$(head -c 300 -- "$d/holder" 2>/dev/null)" = "$me" ]; then '
          'echo OURS; exit 0; fi; ' + _TAKE_BODY)
# Remove the lock only while it still names `$2` (the holder we judged stale, or ourselves).
_DROP = ('d=$1 who=$2; [ -L "$d" ] && exit 0; [ "$(head -c 300 -- "$d/holder" 2>/dev/null)" = "$who" ] || exit 0; '
         'rm -f -- "$d/holder"; rmdir -- "$d"')


@dataclass(frozen=True)
class RemoteHolder:
    """Who holds a device's lock, as its holder line says."""

    line: str
    age_s: float
    fields: Mapping[str, str]

    @property
    def description(self) -> str:
        f = self.fields
        if not f:
            return f"an unknown holder (lock {self.age_s:.0f} s old)"
        return (f"{f.get('user', '?')}@{f.get('host', '?')} pid {f.get('pid', '?')} as device {f.get('device', '?')} "
                f"since {f.get('since', '?')}")

    def stale(self, stale_s: float) -> str | None:
        """Why this holder is gone (the lock may be taken over), or None while it may be alive."""
        if self.age_s > stale_s:
            return f"it is {self.age_s:.0f} s old (over {stale_s:g} s)"
        if not self.fields:
            return f"it has no holder line after {self.age_s:.0f} s" if self.age_s > REMOTE_LOCK_HALF_TAKEN_SEC else None
        if self.fields.get("host") == socket.gethostname() and self.fields.get("pid", "").isdigit():
            try:
                os.kill(int(self.fields["pid"]), 0)
            except ProcessLookupError:
                return f"its process {self.fields['pid']} on this host has ended"
            except PermissionError:
                return None
        return None


def _holder_line(device: str) -> str:
    fields = {"host": socket.gethostname(), "pid": str(os.getpid()), "user": getpass.getuser(), "device": device,
              "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "token": uuid.uuid4().hex}
    return " ".join(f"{k}={v}" for k, v in fields.items())


def _held_by(device: str, lock: str, answer: str) -> RemoteHolder:
    """Who holds the lock, from a HELD answer; any other answer fails the device at once, naming the lock
    and the device's reason (never a wait on an "unknown holder" that can never let go)."""
    text = answer.strip()
    if not text.startswith("HELD "):
        why = device_reason(text.removeprefix("FAILED")) if text.startswith("FAILED") else \
            f"unexpected answer {one_line(text)[:200]!r}"
        raise DeviceRefused(device, f"cannot take the device lock {lock}: {why}")
    age, _, line = text.removeprefix("HELD ").partition(" ")
    try:
        age_s = float(age)
    except ValueError:
        age_s = 0.0
    fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
    return RemoteHolder(line.strip(), age_s, fields)


class RemoteLock:
    """This session's hold on a device's lock (what `remote_lock` yields)."""

    def __init__(self, agent: DeviceAgent, path: str, me: str, on_wait: Callable[[str], None]) -> None:
        self.agent, self.path, self.me, self.on_wait = agent, path, me, on_wait

    def revalidate(self) -> bool:
        """After a reconnect: the lock must still be ours. Gone (the board rebooted, its workdir
        wiped): taken again, and True (what was staged may be gone too). Held by someone else now:
        DeviceRefused, and the caller must not touch the device (its runner, its files) any more."""
        answer = self.agent.check(["sh", "-c", _CHECK, "etfarm-lock", self.path, self.me], persistent=True).stdout
        if answer.strip() == "TAKEN":
            self.on_wait(f"the device lock {self.path} was gone after the reconnect; taken again")
            return True
        if answer.strip() != "OURS":
            holder = _held_by(self.agent.spec.name, self.path, answer)
            raise DeviceRefused(self.agent.spec.name, f"lost the device lock {self.path} while the link was down: "
                                                      f"it is now held by {holder.description}")
        return False


@contextmanager
def remote_lock(agent: DeviceAgent, *, wait: bool = True, on_wait: Callable[[str], None] = lambda s: None,
                timeout_s: float | None = None, stale_s: float = REMOTE_LOCK_STALE_SEC,
                waited_s: float = 0.0) -> Iterator[RemoteLock]:
    """Hold the lock in the device's workdir for the block, so two hosts, two caches or two inventory
    names of one board never interleave. Busy: wait (bounded by timeout_s) or fail naming the holder;
    a stale lock (its process on this host has ended, or older than stale_s) is taken over.
    `waited_s`: what the host lock already took of --lock-timeout (said when giving up)."""
    name = agent.spec.name
    lock = agent.remote_path(REMOTE_LOCK_REL)
    me = _holder_line(name)
    waiting = LockWait(on_wait, timeout_s)
    while True:
        answer = agent.check(["sh", "-c", _TAKE, "etfarm-lock", lock, me], persistent=True).stdout
        if answer.strip() == "TAKEN":
            break
        holder = _held_by(name, lock, answer)
        why = holder.stale(stale_s)
        if why is not None:
            on_wait(f"taking over the stale device lock of {holder.description}: {why}")
            agent.check(["sh", "-c", _DROP, "etfarm-lock", lock, holder.line], persistent=True)
            continue
        if not wait:
            raise DeviceRefused(name, f"device is in use: its workdir {agent.spec.workdir} is locked by "
                                      f"{holder.description} (drop --no-wait to wait for it)")
        if waiting.expired():
            assert timeout_s is not None
            host = f", {waited_s:.0f} s of them for the host lock," if waited_s >= 0.5 else ""
            raise DeviceRefused(name, f"gave up after {timeout_s + waited_s:g} s{host} waiting for the lock in workdir "
                                      f"{agent.spec.workdir} held by {holder.description} (--lock-timeout)")
        waiting.report(holder.line, f"the device lock in {agent.spec.workdir} held by {holder.description} "
                                    f"for {holder.age_s:.0f} s")
        waiting.sleep(REMOTE_LOCK_POLL_SEC)
    link_lost = False
    try:
        yield RemoteLock(agent, lock, me, on_wait)
    except DeviceError as exc:
        link_lost = retryable(exc)  # a transport fault (not a refusal, an answer or the runner's own failure)
        raise
    finally:
        if link_lost:
            _release_after_link_loss(agent, lock, me, on_wait)
        else:
            _release(agent, lock, me, REMOTE_LOCK_RELEASE_SEC, on_wait)


def _release_after_link_loss(agent: DeviceAgent, lock: str, me: str, on_wait: Callable[[str], None]) -> None:
    """Best effort: reconnect and release, all within REMOTE_LOCK_RELEASE_LOST_SEC. The attempt runs in
    a daemon thread so that a device that accepts the connection and then says nothing cannot hold
    the session past the bound; a late answer after the bound changes nothing (the lock is ours)."""
    budget = REMOTE_LOCK_RELEASE_LOST_SEC
    if budget <= 0:
        on_wait(f"device lock {lock} not released (the link failed); it goes stale when this process ends")
        return
    said: list[str] = []

    def attempt() -> None:
        started = time.monotonic()
        try:
            agent.reconnect()
        except EtfarmError as exc:
            said.append(f"no connection: {exc}")
            return
        _release(agent, lock, me, max(1.0, budget - (time.monotonic() - started)), said.append)
        said.append("released")

    thread = threading.Thread(target=attempt, name=f"etfarm-unlock-{agent.spec.name}", daemon=True)
    thread.start()
    thread.join(budget)
    if said == ["released"]:
        on_wait(f"device lock {lock} released over a new connection after the link failure")
    else:
        why = said[0] if said else f"no answer within {budget:g} s"
        on_wait(f"could not release the device lock {lock} after the link failure ({why}); it goes stale when "
                "this process ends")


def _release(agent: DeviceAgent, lock: str, me: str, timeout_s: float, on_wait: Callable[[str], None]) -> None:
    command = shlex.join(["sh", "-c", _DROP, "etfarm-lock", lock, me])
    try:
        result = agent.exec_raw(command, timeout_s, persistent=True)
        if result.exit_code != 0:
            on_wait(f"could not release the device lock {lock} (it goes stale when this process ends): "
                    f"{result.decoded().tail(300) or 'no answer'}")
    except Exception as exc:  # noqa: BLE001 - a release after a fault must not replace the fault (cleanup.py)
        log.debug("releasing %s failed", lock, exc_info=True)
        on_wait(f"could not release the device lock {lock} (it goes stale when this process ends): {exc}")
