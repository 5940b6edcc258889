"""The executor on this host: a daemon thread per device session, watched (docs/architecture.md, "The job engine").

The main thread never blocks unboundedly, so Ctrl-C and SIGTERM reach it at once. A session whose
heartbeat stays silent for longer than any one of its steps may take (the run deadline plus the
step's housekeeping and the host grace, WATCHDOG_GRACE_SEC on top) is given up: its runner is
killed, the device is failed, and the thread (a daemon) cannot keep the process alive. Ctrl-C:
every session aborts (runners killed on the devices), then every host process group etfarm started
is killed, the sessions get STOP_WAIT_SEC to record what finished, and the rest are `interrupted`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Protocol, Self

from device_agents import DeviceSpec
from device_agents.base import HOST_DEADLINE_GRACE_SEC, STALL_TIMEOUT_SEC
from device_agents.step import STEP_OVERHEAD_SEC
from orchestrator.base import procs
from orchestrator.base.errors import Blame, UsageError
from orchestrator.results.model import DeviceResult, DeviceStatus, JobOptions
from orchestrator.run.device.heartbeat import Heartbeat
from orchestrator.run.device_record import DeviceRecord
from orchestrator.run.engine.session import DeviceSession
from orchestrator.run.executor import JobContext

WAIT_POLL_SEC = 0.5  # the main thread's longest sleep while devices run (Ctrl-C and the watchdog act within it)
WATCHDOG_GRACE_SEC = 30.0  # on top of a step's own deadlines before a silent device thread is given up
STOP_WAIT_SEC = 15.0  # Ctrl-C: how long device threads get to record what finished once their runners are killed


class Watched(Protocol):
    """What the threads and the watchdog use of a device session (run/engine/session.py)."""

    name: str
    record: DeviceRecord
    heartbeat: Heartbeat

    def run(self) -> DeviceResult: ...
    def abort(self) -> None: ...
    def say(self, message: str) -> None: ...


class LocalExecutor:
    scheduler: str | None = None

    def __init__(self, devices: Sequence[DeviceSpec]) -> None:
        self._specs = {spec.name: spec for spec in devices}
        self._threads: DeviceThreads | None = None
        self._context: JobContext | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def devices(self, names: Sequence[str]) -> list[DeviceSpec]:
        unknown = [n for n in names if n not in self._specs]
        if unknown:
            raise UsageError(f"--devices: {', '.join(unknown)}: not among the selected devices")
        return [self._specs[n] for n in names]

    def execute(self, context: JobContext) -> None:
        self._context = context
        sessions = [DeviceSession(spec, context) for spec in self.devices(context.plan.devices)]
        self._threads = DeviceThreads(sessions, watchdog_limit_s(context.options))
        self._threads.start()  # held before any starts: a Ctrl-C from the first device thread finds them all
        self._threads.wait()

    def stop(self) -> None:
        if self._threads is None or self._context is None:  # Ctrl-C before any device started: the builds
            procs.kill_running()
            return
        self._context.progress("interrupted: stopping the runners and keeping what finished")
        self._threads.stop()


class DeviceThreads:
    """A daemon thread per device session, waited for by the main thread with a bound (the watchdog)."""

    def __init__(self, sessions: Sequence[Watched], limit_s: float) -> None:
        self.sessions = list(sessions)
        self.limit_s = limit_s
        self.results: dict[str, DeviceResult] = {}
        self.threads = {s.name: threading.Thread(target=self._work, args=(s,), name=f"device-{s.name}", daemon=True)
                        for s in self.sessions}

    def start(self) -> None:
        for thread in self.threads.values():
            thread.start()

    def _work(self, session: Watched) -> None:
        self.results[session.name] = session.run()

    def wait(self) -> dict[str, DeviceResult]:
        while True:
            alive = [s for s in self.sessions if self.threads[s.name].is_alive() and s.name not in self.results]
            if not alive:
                return self.results
            now = time.monotonic()
            for session in alive:
                if not session.record.closed and session.heartbeat.silent_for(now) > self.limit_s:
                    self._give_up(session, f"[{session.name}] watchdog: no progress for {self.limit_s:.0f} s; "
                                           "the device thread is wedged and was given up")
            self.threads[alive[0].name].join(WAIT_POLL_SEC)

    def stop(self) -> dict[str, DeviceResult]:
        """Ctrl-C: kill every runner (devices, then host process groups), wait a bounded time, record the rest."""
        aborts = [threading.Thread(target=s.abort, daemon=True) for s in self.sessions]
        for thread in aborts:
            thread.start()
        deadline = time.monotonic() + STOP_WAIT_SEC
        for thread in aborts:
            thread.join(max(0.0, deadline - time.monotonic()))
        procs.kill_running()
        # a Ctrl-C while the threads started: a session never started has no record, and runs on resume
        started = [s for s in self.sessions if self.threads[s.name].ident is not None]
        for session in started:
            self.threads[session.name].join(max(0.0, deadline - time.monotonic()))
        for session in started:
            if session.name not in self.results:
                session.say("interrupted")
                self.results[session.name] = session.record.interrupt()
        return self.results

    def _give_up(self, session: Watched, message: str) -> None:
        """The watchdog: the device failed (infrastructure), its session aborted in the background."""
        session.say(message)
        threading.Thread(target=session.abort, daemon=True).start()
        self.results[session.name] = session.record.close(DeviceStatus.FAILED, message, Blame.INFRASTRUCTURE)


def watchdog_limit_s(options: JobOptions) -> float:
    """The longest a device session may go without progress: one process run's whole step, plus grace."""
    step = max(options.run_timeout_s + STEP_OVERHEAD_SEC, STALL_TIMEOUT_SEC)
    return step + HOST_DEADLINE_GRACE_SEC + WATCHDOG_GRACE_SEC
