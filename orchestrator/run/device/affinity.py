"""`cpus: big` / `cpus: prime`: the runner pinned to a device's fastest cores, found from its own facts.

Phones and many boards mix core types (Pixel 8: 4 Cortex-A510 + 4 A715 + 1 X3). The inventory can
name the fast ones without knowing the cpu numbers; describe.sh's facts say them:

- clusters: one `clusters.cpuN` per cpufreq policy (`cpus`, `capacity` from the kernel's
  `cpu_capacity`, `max_khz`), ranked by capacity, else by max frequency;
- without cpufreq policies (a board or VM without cpufreq): the cpus grouped by their own
  `cpus.cpuN.capacity`, else `cpus.cpuN.max_khz`.

`prime` is the fastest cluster (Pixel 8: cpu 8, the X3); `big` every cluster but the slowest (Pixel 8:
cpus 4-8), i.e. no little core. With a single cluster both are every cpu. The result is taskset's list.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from device_agents.facts import ClusterFacts, CpuFacts, DeviceFacts

BIG, PRIME = "big", "prime"


class NoClusters(ValueError):
    """The facts do not say which cores are faster."""


@dataclass(frozen=True)
class Affinity:
    asked: str  # big | prime
    cpus: str  # taskset's list syntax, e.g. "4-8"
    by: str  # what ranked the clusters: capacity | max_khz

    def describe(self) -> str:
        return f"{self.cpus} ({self.asked}, by {self.by})"


def resolve(asked: str, facts: DeviceFacts) -> Affinity:
    """The cpus `asked` (big | prime) names on a device with these facts; NoClusters when they cannot tell."""
    groups, by = _groups(facts)
    ranked = sorted(groups)  # slowest first
    chosen = ranked[-1:] if asked == PRIME else ranked[1:] or ranked
    return Affinity(asked, cpu_list(c for speed in chosen for c in groups[speed]), by)


def cpu_list(cpus: Iterable[int]) -> str:
    """taskset's list for these cpus: runs as ranges ("0-3,8")."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    start = prev = None
    for cpu in [*ordered, None]:
        if cpu is not None and prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = cpu
    return ",".join(parts)


def parse_cpu_list(text: object) -> list[int]:
    """taskset's list syntax ("4-7", "0,2", 8) as cpu numbers; [] for anything else."""
    cpus: list[int] = []
    for part in str(text).split(","):
        low, _, high = part.strip().partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            return []
        cpus += range(int(low), int(high or low) + 1)
    return cpus


def _groups(facts: DeviceFacts) -> tuple[dict[int, list[int]], str]:
    """{speed: cpus} and what the speed is, from the clusters, else from the cpus one by one."""
    members: list[tuple[list[int], ClusterFacts | CpuFacts]] = [(parse_cpu_list(c.cpus), c) for c in facts.clusters]
    members = [(cpus, c) for cpus, c in members if cpus]
    if not members:  # no cpufreq policies: every cpu on its own
        members = [([c.number], c) for c in facts.cpus if c.number is not None]
    for by, speed in (("capacity", lambda c: c.capacity), ("max_khz", lambda c: c.max_khz)):
        if members and all(isinstance(speed(c), int) for _, c in members):
            groups: dict[int, list[int]] = {}
            for cpus, c in members:
                groups.setdefault(int(speed(c)), []).extend(cpus)
            return groups, by
    raise NoClusters("the device reports neither cpu capacities nor maximum frequencies "
                     "(cpu_capacity, cpufreq in sysfs)")
