"""ExecuTorch's C++ runtime logs its CPU probing to stderr when it loads in this process (the Python runtime that
computes a quantized program's outputs on the host): `[cpuinfo_utils.cpp:71] Reading file /sys/devices/soc0/...`,
five lines a user cannot act on. `runtime_noise_dropped` passes everything else written to fd 2 through, in order."""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import threading
from collections.abc import Iterator

NOISE = re.compile(rb"^\[cpuinfo_utils\.cpp:\d+\] ")
_JOIN_SEC = 5.0  # a child that inherited the pipe and lives on must not hold the export


@contextlib.contextmanager
def runtime_noise_dropped() -> Iterator[None]:
    """fd 2 through a pipe whose lines are copied to the real stderr, but ExecuTorch's cpuinfo lines."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    try:
        saved = os.dup(2)
        read_end, write_end = os.pipe()
    except OSError:  # no fd 2, or no fds left: nothing is filtered
        yield
        return
    os.dup2(write_end, 2)
    os.close(write_end)
    pump = threading.Thread(target=_copy, args=(read_end, saved), name="etfarm-stderr", daemon=True)
    pump.start()
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(saved, 2)  # the pipe's last writer in this process gone: the pump sees its end
        pump.join(_JOIN_SEC)
        os.close(saved)


def _copy(read_end: int, target: int) -> None:
    with os.fdopen(read_end, "rb") as source:
        for line in source:
            if not NOISE.match(line):
                with contextlib.suppress(OSError):
                    os.write(target, line)


@contextlib.contextmanager
def without_partial_graph() -> Iterator[None]:
    """torch.export prints the partial FX graph of a failed export to sys.stderr (`_log_export_wrapper` in
    torch/export/_trace.py): some 20 lines of graph before etfarm's one-line error. What is written to
    sys.stderr meanwhile is held, and given back without that graph (a model's own prints pass)."""
    held = io.StringIO()
    try:
        with contextlib.redirect_stderr(held):
            yield
    except Exception as exc:
        graph = getattr(exc, "partial_fx_graph", None)
        sys.stderr.write(held.getvalue().replace(f"{graph}\n", "") if graph else held.getvalue())
        raise
    sys.stderr.write(held.getvalue())
