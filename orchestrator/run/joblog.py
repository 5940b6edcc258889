"""The job's log file: DIR/etfarm.log holds every `etfarm` logger's record at DEBUG (progress lines, device commands).

Records made before the run directory exists (export progress) are kept in memory and written
first; a resumed job appends to the log it has. Not the root logger: a library (executorch) may
have configured it, and the job's DEBUG records belong in the file (on stderr only with -v,
through the `etfarm` logger's own handler).
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
from collections.abc import Callable, Iterator
from pathlib import Path

JOB_LOGGER = "etfarm"  # the whole hierarchy: etfarm.progress.*, etfarm.device.<name>, ...
LOG_FORMAT = "%(asctime)s.%(msecs)03d %(threadName)s %(name)s %(levelname)s %(message)s"
_EARLY_RECORDS = 100_000  # records kept before the run directory exists (export progress)

Attach = Callable[[Path], None]


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
        file_handler = logging.FileHandler(path, encoding="utf-8")
        file_handler.setFormatter(logging.Formatter(LOG_FORMAT, "%Y-%m-%dT%H:%M:%S"))
        early.setTarget(file_handler)
        early.flush()
        logger.removeHandler(early)
        logger.addHandler(file_handler)
        handlers.append(file_handler)

    if append_to is not None:
        attach(append_to)
    try:
        yield attach
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
            handler.close()
        logger.setLevel(previous[0])
        logger.propagate = previous[1]
