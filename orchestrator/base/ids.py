"""The id grammar: what a run id, night id, device or model name read back from a file may be.

Ids read from files etfarm did not just write (a manifest, night.json, verdicts.json, a site's manifest) name files
(`nights/<id>.html`, run directories, locks) and reach pages and stdout, so each is checked here before any of
that: letters and digits first, then letters, digits, '.', '_', '-' or ':' (an adb device is `adb:SERIAL`), at
most 128 characters. No '/', no markup, no newline, no leading dot.
"""

from __future__ import annotations

import re
from typing import Any

from orchestrator.base.errors import DataError

ID_MAX = 128
_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._:-]{{0,{ID_MAX - 1}}}")
_SHOWN = 40


def is_id(value: Any) -> bool:
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def checked_id(value: Any, where: str) -> str:
    """`value` when it is an id; a DataError naming `where` (the file and key) otherwise."""
    if is_id(value):
        return value
    shown = repr(value)
    shown = shown if len(shown) <= _SHOWN else shown[:_SHOWN - 1] + "…"
    raise DataError(f"{where}: {shown} is not an id (letters, digits, '.', '_', '-', ':', at most {ID_MAX}, "
                    "starting with a letter or digit)")
