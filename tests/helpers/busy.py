"""A busy loop on one core, for tests and benchmarks of the interference flags and the stability measure.

`busy_loop(core)` is what a second process sharing the runner's core does: `while True: pass`
at the same priority. `busy_loop(core, realtime=True)` is the deterministic kind the tests use:
a SCHED_FIFO loop (priority BUSY_PRIORITY, above the runner's RUNNER_PRIORITY under
`chrt -f`) that spins SPIN_S of every 2 * SPIN_S. With the runner itself real-time, no ordinary
process on a shared machine can slow the runner's core (so the runs before the loop starts are
a known-quiet reference), and the loop takes half of that core whatever else runs: every
calibration and every execution longer than a period is about twice as slow.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

RUNNER_PRIORITY = 10
BUSY_PRIORITY = 20
SPIN_S = 0.001
REALTIME_RUNNER = ("chrt", "-f", str(RUNNER_PRIORITY))  # an exec_prefix: the runner under SCHED_FIFO

_DUTY = f"""
import time
while True:
    end = time.perf_counter() + {SPIN_S}
    while time.perf_counter() < end:
        pass
    time.sleep({SPIN_S})
"""


def realtime_available() -> str | None:
    """None when this process may use SCHED_FIFO (chrt and CAP_SYS_NICE), else why not."""
    if shutil.which("chrt") is None or shutil.which("taskset") is None:
        return "chrt and taskset (util-linux) are needed"
    probe = subprocess.run(["chrt", "-f", str(RUNNER_PRIORITY), "true"], capture_output=True, text=True, check=False)
    return None if probe.returncode == 0 else f"SCHED_FIFO refused: {probe.stderr.strip()} (needs root or CAP_SYS_NICE)"


def busy_loop(core: str, realtime: bool = False) -> subprocess.Popen[bytes]:
    """Start the loop pinned to `core`; the caller kills it (kill(), wait())."""
    if realtime:
        argv = ["taskset", "-c", core, "chrt", "-f", str(BUSY_PRIORITY), sys.executable, "-c", _DUTY]
    else:
        argv = ["taskset", "-c", core, sys.executable, "-c", "while True: pass"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
    import time

    time.sleep(0.3)  # let the scheduler see it
    return proc
