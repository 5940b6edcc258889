"""Testbed prerequisites: with CI=true a missing tool fails the test; elsewhere it skips."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def missing(reason: str) -> NoReturn:
    """A testbed prerequisite is absent: fail under CI=true (never a silent skip), else skip."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)  # reached only outside CI (CI=true failed just above)


def require_tool(name: str) -> str:
    """Path of a testbed tool (a name on PATH or an absolute path), or `missing`."""
    found = shutil.which(name) or (name if os.path.isabs(name) and os.access(name, os.X_OK) else None)
    if found:
        return found
    missing(f"testbed tool {name!r} is not installed (run `make testbed` or scripts/install-testbed.sh)")
