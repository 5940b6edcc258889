"""Device locks: two etfarm runs (or a scripted human) never share a device.

Two locks, both held for a session. `device_lock`: a host file lock per inventory name (cheap, no
device needed). `remote_lock`: a lock directory in the device's workdir recording host, pid, user
and time, so two hosts, two caches or two inventory names for one board cannot interleave either;
a holder whose process on this host has ended, or a lock older than REMOTE_LOCK_STALE_SEC, is
taken over. --lock-timeout is one budget for both waits: the remote lock gets what the host lock
left of it (`device_lock` yields the seconds it waited; `budget_left`).

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
from orchestrator.cache import cache_dir
from orchestrator.errors import DeviceError, DeviceRefused, EtfarmError
from orchestrator.run.retry import retryable

log = logging.getLogger(__name__)

LOCK_POLL_SEC = 0.5


@contextmanager
def device_lock(device: str, *, wait: bool = True, on_wait: Callable[[str], None] = lambda s: None,
                timeout_s: float | None = None) -> Iterator[float]:
    """Hold the device's lock for the block; yields the seconds spent waiting for it.
    Busy: wait (telling on_wait who holds it) or fail."""
    path = cache_dir("locks") / f"{device}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    started = time.monotonic()
    try:
        if not _try_lock(fd):
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            if not wait:
                raise DeviceError(device, f"device is busy: locked by {holder} (drop --no-wait to wait for it)")
            on_wait(f"waiting for the device lock held by {holder}")
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            while not _try_lock(fd):
                if deadline is not None and time.monotonic() > deadline:
                    raise DeviceError(device, f"gave up after {timeout_s:g} s waiting for the device lock held by {holder} "
                                              f"(--lock-timeout)")
                time.sleep(LOCK_POLL_SEC)
        os.ftruncate(fd, 0)
        holder = f"pid {os.getpid()} of {getpass.getuser()}@{socket.gethostname()} since {time.strftime('%H:%M:%S')}"
        os.pwrite(fd, holder.encode(), 0)
        yield time.monotonic() - started
    finally:
        os.close(fd)  # closing releases the flock


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
_TAKE = ('d=$1 me=$2; if mkdir -- "$d" 2>/dev/null; then printf "%s\\n" "$me" >"$d/holder" && echo TAKEN; exit 0; fi; '
         'now=$(date +%s); since=$(stat -c %Y -- "$d" 2>/dev/null || echo "$now"); '
         'printf "HELD %s %s\\n" "$((now - since))" "$(head -c 300 -- "$d/holder" 2>/dev/null)"')
# Whether the lock still names `$2` (OURS), is gone and was taken again (TAKEN), or names another (HELD ...).
_CHECK = ('d=$1 me=$2; [ -L "$d" ] && { echo "HELD 0 a symbolic link"; exit 0; }; '
          'if [ "$(head -c 300 -- "$d/holder" 2>/dev/null)" = "$me" ]; then echo OURS; exit 0; fi; '
          'if mkdir -- "$d" 2>/dev/null; then printf "%s\\n" "$me" >"$d/holder" && echo TAKEN; exit 0; fi; '
          'printf "HELD 0 %s\\n" "$(head -c 300 -- "$d/holder" 2>/dev/null)"')
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


def _parse_held(answer: str) -> RemoteHolder:
    _, _, rest = answer.strip().partition("HELD ")
    age, _, line = rest.partition(" ")
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
            holder = _parse_held(answer)
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
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    said = ""
    while True:
        answer = agent.check(["sh", "-c", _TAKE, "etfarm-lock", lock, me], persistent=True).stdout
        if answer.strip() == "TAKEN":
            break
        holder = _parse_held(answer)
        why = holder.stale(stale_s)
        if why is not None:
            on_wait(f"taking over the stale device lock of {holder.description}: {why}")
            agent.check(["sh", "-c", _DROP, "etfarm-lock", lock, holder.line], persistent=True)
            continue
        if not wait:
            raise DeviceRefused(name, f"device is in use: its workdir {agent.spec.workdir} is locked by "
                                      f"{holder.description} (drop --no-wait to wait for it)")
        if deadline is not None and time.monotonic() >= deadline:
            assert timeout_s is not None
            host = f", {waited_s:.0f} s of them for the host lock," if waited_s >= 0.5 else ""
            raise DeviceRefused(name, f"gave up after {timeout_s + waited_s:g} s{host} waiting for the lock in workdir "
                                      f"{agent.spec.workdir} held by {holder.description} (--lock-timeout)")
        if holder.line != said:
            on_wait(f"waiting for the device lock in {agent.spec.workdir} held by {holder.description}")
            said = holder.line
        time.sleep(REMOTE_LOCK_POLL_SEC if deadline is None else
                   max(0.0, min(REMOTE_LOCK_POLL_SEC, deadline - time.monotonic())))
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
