"""Suite-wide settings: an isolated etfarm cache and results store (the CI rule for missing tools is in tests/helpers/tools.py)."""

from __future__ import annotations

import os
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


@pytest.fixture(scope="session", autouse=True)
def etfarm_store_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`etfarm run` records into the default store: in tests that is a temporary one, never ~/.local/share."""
    data_home = tmp_path_factory.mktemp("xdg-data")
    os.environ["XDG_DATA_HOME"] = str(data_home)
    os.environ.pop("ETFARM_STORE", None)
    return data_home / "etfarm" / "results.db"
