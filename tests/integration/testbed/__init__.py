"""Test-only peers (Chromium, a delaying proxy, network namespaces, agent checks) beside the product's
emulated devices (orchestrator/emulate/: sshd, the adb server, the phone daemon), whose process helpers
are re-exported here for the tests."""

from __future__ import annotations

from orchestrator.emulate import (  # noqa: F401  (re-exported for the tests)
    TAG_VAR,
    descendant_pids,
    free_port,
    kill_tagged,
    new_tag,
    tagged_env,
    tagged_pids,
    wait_port,
)
from tests.helpers.tools import missing, require_tool  # noqa: F401  (re-exported for the testbed modules)
