"""Counts as people write them: `1 job`, `2 jobs` (never `1 jobs` or `2 device(s)`). Ground: every layer says counts."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and the noun in its number: counted(1, "job") -> "1 job", counted(3, "process run") -> "3 process runs"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
