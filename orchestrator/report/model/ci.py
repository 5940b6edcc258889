"""What a run gives CI dashboards: one point per (device, model, configuration) and measure, as frozen data.

Filled by report/builders/ci.py from a `Report`; report/render/ci.py writes them in Bencher's Metric Format,
github-action-benchmark's customSmallerIsBetter list and the PyTorch OSS benchmark database's v3 records.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Measure(StrEnum):
    """A measure the formats know, in the unit named here (each format may scale it: Bencher's latency is ns)."""

    LATENCY_MS = "latency"  # end-to-end p50 per execution, its bootstrap interval as low / high
    MEAN_LATENCY_MS = "mean-latency"  # the mean of every execution (what ExecuTorch's dashboards call average)
    LOAD_MS = "load-time"  # method load, p50 over the warm runs
    PEAK_RSS_KB = "peak-rss"
    PSS_KB = "pss"
    PLANNED_BYTES = "planned-memory"
    TTFT_MS = "ttft"  # an LLM's time to first token
    DECODE_TOKENS_PER_S = "decode-tokens-per-s"  # bigger is better: github-benchmark's list takes ms per token
    ENERGY_UJ = "energy-per-inference"  # microjoules above idle per inference, its 95 % interval as low / high
    POWER_MW = "power"  # average power above idle while the model ran
    # memory by owner after the executions (results/footprint.py Owners), bytes
    MEMORY_PROGRAM_BYTES = "memory-program"
    MEMORY_PLANNED_BYTES = "memory-planned"
    MEMORY_DELEGATE_BYTES = "memory-delegate"
    MEMORY_RUNTIME_BYTES = "memory-runtime"
    MEMORY_OTHER_BYTES = "memory-other"


# Each owner of results/footprint.py's Owners and its measure.
OWNER_MEASURES: dict[str, Measure] = {
    "program": Measure.MEMORY_PROGRAM_BYTES, "planned": Measure.MEMORY_PLANNED_BYTES,
    "delegate": Measure.MEMORY_DELEGATE_BYTES, "runtime": Measure.MEMORY_RUNTIME_BYTES,
    "other": Measure.MEMORY_OTHER_BYTES,
}


@dataclass(frozen=True)
class CiPoint:
    device: str
    model: str
    configuration: str  # the backend, and the recipe where one was given ("xnnpack", "xnnpack int8")
    target: str  # linux-aarch64, android-arm64-v8a, host
    emulated: bool  # qemu on a host: every format says so in the benchmark's name or its extra fields
    measure: Measure
    value: float
    low: float | None = None
    high: float | None = None
    runs: int = 0  # process runs behind the value (0: not a per-run figure)

    @property
    def benchmark(self) -> str:
        """The benchmark's name: model, configuration and device, `(emulated)` marked so that emulated points never
        join a hardware series."""
        device = f"{self.device} (emulated)" if self.emulated else self.device
        return f"{self.model} [{self.configuration}] on {device}"
