"""Fixtures of tests/unit/device_agents."""

from tests.helpers.fake_adb import adb_servers  # noqa: F401  (a fixture: an in-process fake adb server)
