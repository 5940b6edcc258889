"""report/trust.py: what the report says of a failed try."""

from __future__ import annotations

from orchestrator.report.builders.trust import trust_notes
from orchestrator.results.job_config import JobConfig
from orchestrator.results.model import Attempt, DeviceResult, DeviceStatus, Job, JobStatus


def test_a_failed_try_is_said_to_be_tried_again_only_when_it_was() -> None:
    """Issue 31: a process run that failed once was reported as 'tried again'."""
    attempts = (Attempt("connect", "reset", "t", retried=True), Attempt("run m run-1", "runner exited 1", "t", retried=False),
                Attempt("stage", "lost", "t"))  # the last from a manifest written before `retried` was recorded
    job = Job("r", JobStatus.FAILED, "t", JobConfig(("d",), ("m.py:build",), "xnnpack"),
              devices=(DeviceResult("d", status=DeviceStatus.FAILED, attempts=attempts),))
    assert [n.text for n in trust_notes(job, ["m"])] == [
        "connect: failed (reset) and was tried again; the failed try is not in the statistics",
        "run m run-1: failed (runner exited 1) and was not tried again",
        "stage: failed (lost); the failed try is not in the statistics",
    ]
