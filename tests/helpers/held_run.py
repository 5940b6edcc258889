"""An exec prefix that holds one process run on the device until the test releases it: a fault or a signal lands
while that run is running however slow the host, where a fixed pause (`sleep 3`) could be outrun."""

from __future__ import annotations

import shlex
from pathlib import Path


def held_run_2(release: Path) -> tuple[str, ...]:
    """An exec prefix that holds run 2's runner on the device until `release` exists (at most 120 s): the test, not
    the clock, decides that run 2 is still running when the fault strikes. Every other run starts at once.
    `release` must be a path the device sees (the host's own for `local` and the test sshd, the phone's storage)."""
    gate = shlex.quote(str(release))
    script = (f'case "$*" in */run-2/*) i=0; while [ ! -e {gate} ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); '
              'done;; esac; exec "$@"')
    return ("sh", "-c", script, "held-run-2")
