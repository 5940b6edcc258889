"""A quantized program run on this host (ExecuTorch's Python runtime) for its reference outputs, and why it failed.

The runtime says why a method failed on the process's stderr (file descriptor 2, from C++: `[XNNExecutor.cpp:169]
Internal Error: Propagating input shapes failed ...`) and raises only `method->execute() failed with error 0x1`.
So descriptor 2 is held in a temporary file while the method runs: on failure, the runtime's own error line
goes into the configuration's one-line reason (and is not printed as noise); on success, whatever it wrote is
given back to stderr.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from orchestrator.base.errors import ConfigurationFailed, one_line

_ERROR_LINE = re.compile(r"(\[[^\]]+\]\s*)?[^\n]*\berror\b[^\n]*", re.IGNORECASE)
_LOG_PREFIX = re.compile(r"^[A-Z] \d\d:\d\d:\d\d\.\d+ executorch:\s*")  # ET_LOG's "E 00:00:00.123 executorch:"


def run_on_host(run: Callable[[], Any], what: str) -> Any:
    """`run()`, or a ConfigurationFailed (an ExportError) with the runtime's own reason when it raises. `what` names
    the configuration."""
    with held_stderr() as said:
        try:
            return run()
        except Exception as exc:  # noqa: BLE001  (the runtime's reason, whatever it raised)
            raised = one_line(str(exc)) or type(exc).__name__
            own = runtime_reason(said())
            reason = f"{own} ({raised})" if own and own not in raised else raised
            raise ConfigurationFailed(f"the host's reference run of {what} failed: {reason}") from None


def runtime_reason(text: str) -> str:
    """The runtime's first error line in `text` (without its log prefix), or ''."""
    for line in text.splitlines():
        line = _LOG_PREFIX.sub("", line.strip())
        if _ERROR_LINE.fullmatch(line):
            return line
    return ""


@contextlib.contextmanager
def held_stderr() -> Iterator[Callable[[], str]]:
    """File descriptor 2 redirected to a temporary file; yields a reader of what was written so far. What was
    written is given back to stderr unless the block raised (its reason then carries it)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)

        def said() -> str:
            held.flush()
            held.seek(0)
            return held.read().decode(errors="replace")

        failed = False
        try:
            yield said
        except BaseException:
            failed = True
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            if not failed:
                text = said()
                if text:
                    sys.stderr.write(text)
