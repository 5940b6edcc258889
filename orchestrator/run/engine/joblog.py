"""The job's log file: DIR/etfarm.log holds every `etfarm` logger's record at DEBUG (progress lines, device commands).

Records made before the run directory exists (export progress) are kept in memory and written
first; a resumed job appends to the log it has. Not the root logger: a library (executorch) may
have configured it, and the job's DEBUG records belong in the file (on stderr only with -v,
through the `etfarm` logger's own handler).

The log is a record of the job, never a reason for it to fail: a disk that fills or turns read-only
stops the file (said once on stderr, the job goes on), and closing it then raises nothing. (The
standard FileHandler prints a "--- Logging error ---" traceback for every record it cannot write,
and raises from `close` when the last flush fails.)
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from orchestrator.base.cleanup import close_quietly

JOB_LOGGER = "etfarm"  # the whole hierarchy: etfarm.progress.*, etfarm.device.<name>, ...
LOG_FORMAT = "%(asctime)s.%(msecs)03d %(threadName)s %(name)s %(levelname)s %(message)s"
_EARLY_RECORDS = 100_000  # records kept before the run directory exists (export progress)

Attach = Callable[[Path], None]


class JobLogFile(logging.FileHandler):
    """DIR/etfarm.log: stops writing at the first error of the host's disk, saying so once on stderr."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, encoding="utf-8")
        self.setFormatter(logging.Formatter(LOG_FORMAT, "%Y-%m-%dT%H:%M:%S"))
        self.stopped: str | None = None  # why the file gets no more records

    def emit(self, record: logging.LogRecord) -> None:
        if self.stopped is None:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            super().handleError(record)  # a record that cannot be formatted: logging's own report
            return
        self.stopped = error.strerror or str(error)
        print(f"warning: job log {self.baseFilename}: {self.stopped}; no more lines written to it", file=sys.stderr)

    def close(self) -> None:
        close_quietly(f"the job log {self.baseFilename}", super().close)


def _open_log(path: Path) -> logging.Handler | None:
    try:
        return JobLogFile(path)
    except OSError as exc:
        print(f"warning: job log {path}: {exc.strerror or exc}; the job runs without it", file=sys.stderr)
        return None


@contextlib.contextmanager
def job_log(append_to: Path | None = None) -> Iterator[Attach]:
    """Capture the `etfarm` loggers at DEBUG; `attach(path)` starts the file with what came before it
    (`append_to`: the run directory's log exists already, as when resuming: log there from the start)."""
    logger = logging.getLogger(JOB_LOGGER)
    early = logging.handlers.MemoryHandler(_EARLY_RECORDS, flushLevel=logging.CRITICAL + 1)
    handlers: list[logging.Handler] = [early]
    previous = (logger.level, logger.propagate)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(early)

    def attach(path: Path) -> None:
        file_handler = _open_log(path)
        if file_handler is not None:
            early.setTarget(file_handler)
            early.flush()
        logger.removeHandler(early)
        if file_handler is not None:
            logger.addHandler(file_handler)
            handlers.append(file_handler)

    if append_to is not None:
        attach(append_to)
    try:
        yield attach
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
            close_quietly("a job log handler", handler.close)
        logger.setLevel(previous[0])
        logger.propagate = previous[1]
