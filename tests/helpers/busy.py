"""A busy loop on one core, for tests and benchmarks of the interference flags and the stability measure.

`busy_loop(core)` is what a second process sharing the runner's core does: `while True: pass`
at the same priority. `busy_loop(core, realtime=True)` is the deterministic kind the tests use:
a SCHED_FIFO loop (priority BUSY_PRIORITY, above the runner's RUNNER_PRIORITY under
`chrt -f`) that spins `spin_s`, sleeps `sleep_s`, and again. With the runner itself real-time,
no ordinary process on a shared machine can take the runner's core (so the runs before the loop
starts are a known-quiet reference), and the loop takes its share of that core whatever else
runs: 1 ms of every 2 (benchmarks/bench_stability.py) makes a calibration about twice as slow;
9 ms of every 10 (the tests) about ten times, far beyond anything the host's background did to
a real-time runner in the benchmark (+271 % at worst).
"""

from __future__ import annotations

import shutil
import subprocess
import sys

RUNNER_PRIORITY = 10
BUSY_PRIORITY = 20
REALTIME_RUNNER = ("chrt", "-f", str(RUNNER_PRIORITY))  # an exec_prefix: the runner under SCHED_FIFO

_DUTY = """
import sys, time
spin, rest = float(sys.argv[1]), float(sys.argv[2])
while True:
    end = time.perf_counter() + spin
    while time.perf_counter() < end:
        pass
    time.sleep(rest)
"""


def realtime_available() -> str | None:
    """None when this process may use SCHED_FIFO (chrt and CAP_SYS_NICE), else why not."""
    if shutil.which("chrt") is None or shutil.which("taskset") is None:
        return "chrt and taskset (util-linux) are needed"
    probe = subprocess.run(["chrt", "-f", str(RUNNER_PRIORITY), "true"], capture_output=True, text=True, check=False)
    return None if probe.returncode == 0 else f"SCHED_FIFO refused: {probe.stderr.strip()} (needs root or CAP_SYS_NICE)"


def busy_loop(core: str, realtime: bool = False, spin_s: float = 0.001, sleep_s: float = 0.001) -> subprocess.Popen[bytes]:
    """Start the loop pinned to `core`; the caller kills it (kill(), wait())."""
    if realtime:
        argv = ["taskset", "-c", core, "chrt", "-f", str(BUSY_PRIORITY), sys.executable, "-c", _DUTY, str(spin_s),
                str(sleep_s)]
    else:
        argv = ["taskset", "-c", core, sys.executable, "-c", "while True: pass"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
    import time

    time.sleep(0.3)  # let the scheduler see it
    return proc
