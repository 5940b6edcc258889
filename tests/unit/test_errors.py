"""errors.disk_full: a full host disk is recognised wherever it sits in an exception's chain."""

from __future__ import annotations

import errno

from orchestrator.base.errors import DeviceError, disk_full


def test_disk_full_finds_the_path_through_wrapping_errors() -> None:
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device", "/runs/x/etdump.etdp")
        except OSError as inner:
            raise DeviceError("board", "pull failed") from inner
    except DeviceError as outer:
        assert disk_full(outer) == "/runs/x/etdump.etdp"
    assert disk_full(OSError(errno.EDQUOT, "Disk quota exceeded")) == ""  # full, but no path named
    assert disk_full(OSError(errno.EACCES, "Permission denied", "/x")) is None
    assert disk_full(ValueError("nope")) is None
