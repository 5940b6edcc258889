"""ExecuTorch's cpuinfo lines never reach the user's terminal (issue 35 item 9); what else is written to fd 2 passes,
in order. A real process writing to its fd 2 as the C++ runtime does."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os, sys
from orchestrator.artifacts.runtime_noise import runtime_noise_dropped
with runtime_noise_dropped():
    os.write(2, b"[cpuinfo_utils.cpp:71] Reading file /sys/devices/soc0/image_version\\n")
    print("[   1.0s] exporting m", file=sys.stderr, flush=True)
    os.write(2, b"[cpuinfo_utils.cpp:125] CPU info and manual query on # of cpus dont match.\\n")
    os.write(2, b"a warning of the model's own\\n")
os.write(2, b"after\\n")
"""


def test_cpuinfo_lines_are_dropped_and_the_rest_passes_in_order() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True)
    assert done.stderr.splitlines() == ["[   1.0s] exporting m", "a warning of the model's own", "after"]
