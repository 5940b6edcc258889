"""A second Ctrl-C in an interrupted program's last lines still ends it with exit 130.

Found by the stress loop (scripts/stress-faults.sh): `test_a_hangup_or_a_second_ctrl_c_still_stops_cleanly`
sent its second SIGINT 0.3 s after the first; the stop had already finished, `interrupts` had handed the
previous handler (the default) back, and the signal killed the process (-2) instead of exit 130. Here the
second signal is sent deterministically from an atexit hook: after `main` has returned, while the
interpreter shuts down.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

# A command that is interrupted by a real SIGINT and stops (as `_run` does: KeyboardInterrupt -> 130),
# then a second SIGINT after main has returned. The child starts with SIGINT at its default, as a
# program started from a shell (the parent test runner may ignore it).
CHILD = """
import atexit, os, signal, sys, time
from orchestrator import cli

def interrupted_command(argv):
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(10)
    except KeyboardInterrupt:
        return cli.EXIT_INTERRUPTED
    return 0

def second_ctrl_c():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)  # the signal is handled (or kills) before the process exits

cli._run = interrupted_command
atexit.register(second_ctrl_c)
cli.program()
"""


def test_a_signal_after_an_interrupted_program_returned_does_not_kill_it() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr.strip().splitlines()[-1] == "interrupted (Ctrl-C): what finished is kept", done.stderr
    assert "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("before", [signal.SIG_DFL, signal.default_int_handler], ids=["default", "python-default"])
def test_in_process_main_hands_the_previous_handler_back_even_after_an_interrupt(before: object) -> None:
    """An in-process caller keeps its own Ctrl-C: only the program ignores signals once it is ending."""
    from orchestrator import cli

    saved = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, before)  # type: ignore[arg-type]
    try:
        with cli.interrupts() as received:
            try:
                signal.raise_signal(signal.SIGINT)
            except KeyboardInterrupt:
                pass
        assert received == ["Ctrl-C"]
        assert signal.getsignal(signal.SIGINT) is before
        with cli.interrupts(ending_program=True):
            pass  # not interrupted: nothing to protect, the previous handler comes back
        assert signal.getsignal(signal.SIGINT) is before
    finally:
        signal.signal(signal.SIGINT, saved)
