"""run/engine/joblog.py: the job log never turns a full or read-only disk into an error of the job."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest

from orchestrator.run.engine.joblog import JOB_LOGGER, JobLogFile, job_log


class FullDisk:
    """A file object on a disk with no room left: every write and flush fails as the kernel says."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    def close(self) -> None:
        self.flush()  # as a buffered file does: the last flush raises from close


def test_a_log_whose_disk_fills_stops_once_and_closes_quietly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = logging.getLogger(f"{JOB_LOGGER}.test")
    with job_log() as attach:
        log.info("before the run directory")
        attach(tmp_path / "etfarm.log")
        log.info("written")
        handler = next(h for h in logging.getLogger(JOB_LOGGER).handlers if isinstance(h, JobLogFile))
        handler.stream.close()
        handler.stream = FullDisk()  # type: ignore[assignment]
        for k in range(15):
            log.info("lost %d", k)
    err = capsys.readouterr().err
    assert "Logging error" not in err and "Traceback" not in err, err
    assert err.splitlines() == [f"warning: job log {tmp_path / 'etfarm.log'}: No space left on device; no more lines "
                                "written to it"]
    assert "before the run directory" in (tmp_path / "etfarm.log").read_text()


def test_a_log_that_cannot_be_opened_leaves_the_job_without_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "etfarm.log").mkdir()  # the log's name taken by a directory: opening it fails as a read-only disk would
    with job_log() as attach:
        attach(tmp_path / "etfarm.log")
        logging.getLogger(f"{JOB_LOGGER}.test").info("nowhere to go")
    assert capsys.readouterr().err == f"warning: job log {tmp_path / 'etfarm.log'}: Is a directory; the job runs without it\n"
