"""Cleanup after a fault: one rule for every close, release and shutdown.

When a link dies, whatever closes it afterwards (an SFTP channel, a device shell, an adb stream,
a Dask client) may find the peer gone before its own transport noticed, and raise. That second
error would replace the first one, the fault the user must see. So cleanup never raises: it logs
what failed at debug level and goes on closing what is left.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

_log = logging.getLogger("etfarm.cleanup")


def close_quietly(what: str, close: Callable[[], object], log: logging.Logger | None = None) -> bool:
    """Call `close()`; any exception is logged at debug (`what` names the thing) and swallowed.

    Returns whether it closed cleanly. KeyboardInterrupt and SystemExit still propagate."""
    try:
        close()
    except Exception:  # noqa: BLE001 - the rule of this module: a close after a fault must not raise
        (log or _log).debug("closing %s failed (the link was likely gone already)", what, exc_info=True)
        return False
    return True
