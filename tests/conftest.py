"""Suite-wide settings: an isolated etfarm cache, and the CI rule for missing testbed tools."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def etfarm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All tests share one cache (exports and runner builds are slow) that never touches ~/.cache.

    Set ETFARM_TEST_CACHE_DIR to keep it between local test runs.
    """
    path = Path(os.environ.get("ETFARM_TEST_CACHE_DIR") or tmp_path_factory.mktemp("etfarm-cache"))
    os.environ["ETFARM_CACHE_DIR"] = str(path)
    os.environ.pop("ETFARM_CONFIG", None)
    return path


def require_tool(name: str) -> str:
    """Path of a testbed tool; a missing one fails under CI=true and skips elsewhere."""
    found = shutil.which(name)
    if found:
        return found
    message = f"testbed tool {name!r} is not installed (make testbed installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)
