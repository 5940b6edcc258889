"""An LLM's part of a report: per model that generated, its devices' generation figures and each phase's ops.

Filled by report/builders/llm.py from the results model and the statistics' phase columns; the page
(report/page/llm.py) and the JSON export show it (docs/architecture.md, "LLMs").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LlmDevice:
    """One LLM on one device: its workload and figures (times ms, rates tokens/s, memory KiB)."""

    device: str
    prompt_len: int
    gen_len: int
    prefill_calls: int
    generations: int
    ttft_ms: float | None
    prefill_tokens_per_s: float | None
    decode_tokens_per_s: float | None
    untraced_decode_tokens_per_s: float | None
    rss_prefill_kb: int | None
    pss_prefill_kb: int | None
    rss_decode_kb: int | None
    pss_decode_kb: int | None
    peak_rss_kb: int | None  # the process's high-water mark after the generations
    step_ms: tuple[float, ...]  # decode step i's median latency
    verification: str


@dataclass(frozen=True)
class PhaseOp:
    """One op's time per forward call in one phase on one device."""

    device: str
    phase: str  # "prefill" or "decode"
    name: str
    index: int
    where: str  # module path, or what a delegate call covers
    avg_ms: float
    p50_ms: float | None
    share: float | None  # of the phase's Method::execute time; None under the timer's resolution
    below_resolution: bool = False  # a kernel under the timer's 1 us (another op: 0): shown as such, no share
    delegated: bool = False


@dataclass(frozen=True)
class LlmSection:
    model: str
    devices: tuple[LlmDevice, ...]
    phase_ops: tuple[PhaseOp, ...] = ()
