"""Device facts: what the device is right now (abi, cores, cpufreq, governors, temperatures, load).

`remote/describe.sh` prints `key=value` lines; `a.b.c=v` nests, finite numbers become numbers.
"""

from __future__ import annotations

import math
from importlib import resources
from typing import TYPE_CHECKING, Any

from orchestrator.errors import CommandFailed

if TYPE_CHECKING:
    from device_agents.base import DeviceAgent


def describe(agent: DeviceAgent) -> dict[str, Any]:
    """Run describe.sh on the device (through its persistent shell where it has one) and parse it."""
    script = resources.files("device_agents").joinpath("remote/describe.sh").read_text()
    result = agent.run(["sh", "-c", script], persistent=True)
    if not result.ok:
        raise CommandFailed(agent.spec.name, "describe.sh", result.exit_code, result.tail(), result.timed_out)
    return parse_facts(result.stdout)


def parse_facts(text: str) -> dict[str, Any]:
    """Parse describe.sh output: `key=value` lines; `a.b.c=v` nests; numbers become numbers."""
    facts: dict[str, Any] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep or not key:
            continue
        node = facts
        *parents, leaf = key.strip().split(".")
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[leaf] = _number_or_text(value.strip())
    return facts


# A fact that reads as a number beyond this (or as nan, inf) stays text: it is a device's garbage, and
# JSON (the manifest, the store) holds no NaN and SQLite no integer past 64 bits.
_NUMBER_MAX = 2**63 - 1


def _number_or_text(value: str) -> Any:
    for cast in (int, float):
        try:
            number = cast(value)
        except ValueError:
            continue
        return number if math.isfinite(number) and abs(number) <= _NUMBER_MAX else value
    return value
