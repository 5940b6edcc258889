"""Numbers the README promises, read from README.md itself, so tests hold the code to the text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


@dataclass(frozen=True)
class FaultBounds:
    housekeeping_s: float  # housekeeping commands, and a transfer that stops making progress
    grace_s: float  # the host's grace beyond the device-side deadline


def fault_bounds() -> FaultBounds:
    """From the README's "A device that dies or freezes mid-job is given up within a bounded time" paragraph."""
    text = " ".join(README.read_text().split())
    housekeeping = re.search(r"(\d+(?:\.\d+)?) s for housekeeping commands or a transfer that stops making progress", text)
    grace = re.search(r"plus (\d+(?:\.\d+)?) s of grace on the host", text)
    assert housekeeping and grace, "README.md no longer states the fault bounds this test checks"
    return FaultBounds(float(housekeeping.group(1)), float(grace.group(1)))


@dataclass(frozen=True)
class RunRetryBounds:
    reconnects: int  # reconnects after a process run the link cut off
    waits_s: float  # the waits before them, in all
    release_s: float  # the last try to release the device lock


def run_retry_bounds() -> RunRetryBounds:
    """From the same paragraph: what retrying a cut-off process run adds to giving a device up."""
    text = " ".join(README.read_text().split())
    found = re.search(r"adds at most (\d+) reconnects \(each bounded by the device's `connect_timeout`, [\d.]+ s by "
                      r"default\) after waits of ([\d.]+) s and ([\d.]+) s, and a last try to release the device lock "
                      r"within ([\d.]+) s", text)
    assert found, "README.md no longer states what retrying a cut-off process run adds"
    return RunRetryBounds(int(found.group(1)), float(found.group(2)) + float(found.group(3)), float(found.group(4)))


def lock_wait_report_s() -> float:
    """From "Workdirs and the lock on the device": how often a wait for another job's lock is said again."""
    text = " ".join(README.read_text().split())
    found = re.search(r"for how long when the wait begins, again every (\d+(?:\.\d+)?) s", text)
    assert found, "README.md no longer states how often a wait for the device lock is reported"
    return float(found.group(1))
