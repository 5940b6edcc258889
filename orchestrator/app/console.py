"""Where a command's lines go: results on `out` (stdout: one JSON document under --json), the rest on `err`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass


def _stderr(text: str) -> None:
    print(text, file=sys.stderr)


@dataclass(frozen=True)
class Console:
    out: Callable[[str], None] = print
    err: Callable[[str], None] = _stderr
