"""Device and model names, which become file names (run directories, locks): plain words only, or `adb:SERIAL`
(a phone the inventory does not list), whose serial may hold ':' (`adb:127.0.0.1:5555`), never first, never a
path separator. Ground: the inventory (config.py) and the codec's keyed mappings (codec.py) both check them."""

from __future__ import annotations

import re

ADB_NAME_PREFIX = "adb:"  # `--devices adb:SERIAL`
ADB_SERIAL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def is_plain_name(name: str) -> bool:
    """Whether a device or model name may become file names: plain words, or `adb:SERIAL`."""
    if name.startswith(ADB_NAME_PREFIX):
        return bool(ADB_SERIAL.match(name[len(ADB_NAME_PREFIX):]))
    return bool(_PLAIN_NAME.match(name))
