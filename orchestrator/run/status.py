"""The status rules of a job, each in one place (docs/architecture.md, "The job engine").

- A device whose work ended without a failure is `ok`, or `wrong-results` when some model's
  outputs failed verification (blame: data): `ended_device`. A device session on this host and
  the farm's tasks of one device both end through it.
- Interrupted means no blame: a device stopped by Ctrl-C or SIGTERM is `interrupted` with nobody
  to blame (`interrupted_device`), and so is what the stop cut short on it, whatever error the
  cut raised (a runner killed mid-run, a session aborted): `failure_blame`. Both executors, the
  device session and the finisher record an interruption through these two.
- The job is `interrupted` after Ctrl-C or SIGTERM; else `ok` when it has devices and every one
  is ok and nothing went wrong after them (the host disk full writing stats.csv); else `partial`
  when some device is ok; else `failed`: `job_status`.
- Exit codes follow the job's status: 0 ok, 130 interrupted, 1 otherwise: `exit_code`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from orchestrator.base.errors import EXIT_DEVICE_FAILED, EXIT_INTERRUPTED, EXIT_OK, Blame, blame_of
from orchestrator.results.model import DeviceResult, DeviceStatus, JobStatus


def ended_device(device: DeviceResult) -> DeviceResult:
    """The record of a device whose work ended without a failure: ok, or wrong results."""
    wrong = device.wrong_results()
    if wrong:
        return replace(device, status=DeviceStatus.WRONG_RESULTS, error=f"[{device.name}] wrong results: {wrong}",
                       blame=Blame.DATA)
    return replace(device, status=DeviceStatus.OK)


def interrupted_device(device: DeviceResult) -> DeviceResult:
    """The record of a device that Ctrl-C or SIGTERM stopped: interrupted, nobody to blame."""
    return replace(device, status=DeviceStatus.INTERRUPTED, error=f"[{device.name}] interrupted",
                   blame=failure_blame(None, interrupted=True))


def failure_blame(failure: BaseException | None, *, interrupted: bool) -> Blame | None:
    """Who is to blame for what `failure` cut short: nobody when the job was interrupted (the stop caused it,
    whatever it raised), else the error's own class (errors.blame_of)."""
    if interrupted or failure is None:
        return None
    return blame_of(failure)


def job_status(devices: Sequence[DeviceResult], *, interrupted: bool = False, problem: str | None = None) -> JobStatus:
    """The job's status from its devices' (the one rule of both executors)."""
    if interrupted:
        return JobStatus.INTERRUPTED
    ok = [d.status is DeviceStatus.OK for d in devices]
    if ok and all(ok) and problem is None:
        return JobStatus.OK
    return JobStatus.PARTIAL if any(ok) else JobStatus.FAILED


def exit_code(status: JobStatus) -> int:
    """0 every device succeeded, 130 Ctrl-C or SIGTERM, 1 anything else (docs/how-to/run.md)."""
    if status is JobStatus.INTERRUPTED:
        return EXIT_INTERRUPTED
    return EXIT_OK if status is JobStatus.OK else EXIT_DEVICE_FAILED
