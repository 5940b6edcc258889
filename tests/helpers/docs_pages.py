"""Numbers the documentation promises, read from its pages (docs/), so tests hold the code to the text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
BOARDS = DOCS / "how-to" / "boards.md"


def _text(page: Path) -> str:
    return " ".join(page.read_text(encoding="utf-8").split())


@dataclass(frozen=True)
class FaultBounds:
    housekeeping_s: float  # housekeeping commands, and a transfer that stops making progress
    grace_s: float  # the host's grace beyond the device-side deadline


def fault_bounds() -> FaultBounds:
    """From how-to/boards.md's "A device that dies or freezes mid-job is given up within a bounded time" paragraph."""
    text = _text(BOARDS)
    housekeeping = re.search(r"(\d+(?:\.\d+)?) s for housekeeping commands or a transfer that stops making progress", text)
    grace = re.search(r"plus (\d+(?:\.\d+)?) s of grace on the host", text)
    assert housekeeping and grace, f"{BOARDS} no longer states the fault bounds this test checks"
    return FaultBounds(float(housekeeping.group(1)), float(grace.group(1)))


@dataclass(frozen=True)
class RunRetryBounds:
    reconnects: int  # reconnects after a process run the link cut off
    waits_s: float  # the waits before them, in all
    release_s: float  # the last try to release the device lock


def run_retry_bounds() -> RunRetryBounds:
    """From the same paragraph: what retrying a cut-off process run adds to giving a device up."""
    text = _text(BOARDS)
    found = re.search(r"adds at most (\d+) reconnects \(each bounded by the device's `connect_timeout`, [\d.]+ s by "
                      r"default\) after waits of ([\d.]+) s and ([\d.]+) s, and a last try to release the device lock "
                      r"within ([\d.]+) s", text)
    assert found, f"{BOARDS} no longer states what retrying a cut-off process run adds"
    return RunRetryBounds(int(found.group(1)), float(found.group(2)) + float(found.group(3)), float(found.group(4)))


def lock_wait_report_s() -> float:
    """From "Workdirs and the lock on the device" (how-to/boards.md): how often a wait for another job's lock is
    said again."""
    text = _text(BOARDS)
    found = re.search(r"for how long when the wait begins, again every (\d+(?:\.\d+)?) s", text)
    assert found, f"{BOARDS} no longer states how often a wait for the device lock is reported"
    return float(found.group(1))
