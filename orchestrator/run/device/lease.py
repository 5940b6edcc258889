"""A device held for one session: both locks, a connection, and the way back after a transport fault.

`DeviceLease` takes the host's file lock of the device, connects (retried), then takes the lock in
the device's workdir (run/device/locks.py: one --lock-timeout budget for both); while either waits for
another job the heartbeat says `waiting`, so the watchdog does not take a queued device for a
wedged one. `reconnect` is what goes before a retried step: a new connection, on which the device
lock must still be this session's (`RemoteLock.revalidate`). `retry` runs an idempotent step
with run/device/retry.py's policy, recording every failed attempt in the device's record.
See docs/architecture.md, "Faults: transports".
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TypeVar

from device_agents import DeviceSpec, create_agent
from device_agents.base import DeviceAgent
from orchestrator.results.model import JobOptions
from orchestrator.run.device.heartbeat import Heartbeat
from orchestrator.run.device.locks import RemoteLock, budget_left, device_lock, remote_lock
from orchestrator.run.device.retry import with_retries
from orchestrator.run.device_record import DeviceRecord

T = TypeVar("T")


class DeviceLease:
    def __init__(self, spec: DeviceSpec, options: JobOptions, record: DeviceRecord, heartbeat: Heartbeat,
                 check_cancelled: Callable[[], None]) -> None:
        self.spec = spec
        self.options = options
        self.record = record
        self.heartbeat = heartbeat
        self.check_cancelled = check_cancelled
        self.say = record.say
        self.agent: DeviceAgent | None = None  # connected and locked: set inside `hold`
        self.lock: RemoteLock | None = None

    @contextlib.contextmanager
    def hold(self) -> Iterator[DeviceAgent]:
        """Both locks and a connection for the block; released (the agent closed) whatever ends it."""
        opts = self.options
        with device_lock(self.spec.name, wait=opts.wait_for_lock, on_wait=self._waiting,
                         timeout_s=opts.lock_timeout_s) as waited_s:  # one budget for both locks
            self.heartbeat.beat()
            self.check_cancelled()
            agent = create_agent(self.spec)
            self.say(f"connecting ({self.spec.transport}, target {self.spec.target})")
            try:
                self.retry("connect", agent.connect, agent.close)
                with remote_lock(agent, wait=opts.wait_for_lock, on_wait=self._waiting,
                                 timeout_s=budget_left(opts.lock_timeout_s, waited_s), waited_s=waited_s) as lock:
                    self.heartbeat.beat()
                    self.agent, self.lock = agent, lock
                    try:
                        yield agent
                    finally:
                        self.agent, self.lock = None, None
            finally:
                agent.close()

    def _waiting(self, message: str) -> None:
        self.heartbeat.wait_for_lock()
        self.say(message)

    def reconnect(self) -> None:
        """Before a retried step: a new connection, on which the device lock must still be ours."""
        self.check_cancelled()
        self.heartbeat.beat()  # a bounded retry is progress for the watchdog
        assert self.agent is not None
        self.agent.reconnect()
        if self.lock is not None:
            self.lock.revalidate()  # staging is what comes next anyway

    def retry(self, step: str, call: Callable[[], T], before_retry: Callable[[], None]) -> T:
        """An idempotent step, retried after transport faults (run/device/retry.py); every failure recorded."""
        self.heartbeat.trying(step)
        return with_retries(step, call, record=self.record.attempt, before_retry=before_retry, say=self.say)
