"""Console logging for `-v/--verbose` and the crash file for unexpected exceptions.

Only the `etfarm` logger hierarchy is configured (never the root logger), so libraries such as
paramiko stay quiet. Progress lines are also logged (on `etfarm.progress`) for the run's
etfarm.log; they are printed by `Progress` already, so the console handler leaves them out.
"""

from __future__ import annotations

import logging
import sys
import time
import traceback

from orchestrator.base.cache import cache_dir, write_text_atomic
from orchestrator.base.progress import PROGRESS_LOGGER

ROOT_LOGGER = "etfarm"
CONSOLE_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


class _NotProgress(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.name.startswith(PROGRESS_LOGGER)


def log_to_stderr() -> None:
    """Show DEBUG records of the `etfarm` loggers (device commands on `etfarm.device.<name>`) on stderr."""
    logger = logging.getLogger(ROOT_LOGGER)
    if any(getattr(h, "_etfarm_console", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler._etfarm_console = True  # type: ignore[attr-defined]
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter(CONSOLE_FORMAT, "%H:%M:%S"))
    handler.addFilter(_NotProgress())
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # a library may have configured the root logger: print each record once


def record_crash(exc: BaseException) -> str:
    """Write `exc`'s traceback to a file under the cache; says where, for the `error:` line (a cache on a
    full or read-only disk gets no file, and the one line still comes, with no traceback of its own)."""
    try:
        path = cache_dir("crashes") / f"{time.strftime('%Y%m%d-%H%M%S')}-{type(exc).__name__}.txt"
        write_text_atomic(path, "".join(traceback.format_exception(exc)))
    except OSError as failed:
        return f"traceback not saved (the cache: {failed.strerror or failed})"
    logging.getLogger(ROOT_LOGGER).debug("internal error, traceback in %s", path, exc_info=exc)
    return f"details in {path}"
