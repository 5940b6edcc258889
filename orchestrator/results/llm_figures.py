"""An LLM's generation figures over one model's process runs on one device (docs/architecture.md, "LLMs").

Each process run of an LLM keeps its generations (`ProcessRun.llm`, the runner's `llm` object typed
by artifacts/generation.py): time to first token, prefill and decode times and rates, every decode
step's latency, memory after prefill and after decode. `LlmFigures` gathers them per (device,
model) for the summary, the report and the manifest's derived `summary.llm`; `metric_runs` gives the
per-process-run samples the verdicts compare (verdicts/llm_metrics.py). Headline figures are over
the traced runs, as the wall clock is; the untraced runs' decode rate is shown beside them (the
event tracer's cost on tiny decode steps). Medians are numpy's linear percentile (orchestrator.base.stats).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from orchestrator.artifacts.generation import GenerationFigures, LlmRunFigures
from orchestrator.base.codec import SKIP, Layout, encode
from orchestrator.base.stats import median

if TYPE_CHECKING:
    from orchestrator.results.model import Job, ProcessRun

TTFT, DECODE_RATE = "ttft", "decode_tokens_per_s"


def generations(runs: Iterable[ProcessRun], traced: bool = True) -> list[GenerationFigures]:
    """Every measured generation of the traced (or untraced) runs, in run order."""
    return [g for r in runs if r.traced == traced and r.llm is not None for g in r.llm.generations]


def _highest(name: str) -> property:
    """`LlmFigures.memory_kb(name)` as a property."""
    return property(lambda figures: figures.memory_kb(name))


@dataclass(frozen=True)
class LlmFigures:
    """One LLM on one device: the workload and its figures over every measured generation."""

    prompt_len: int
    gen_len: int  # generated tokens per generation (token 1 from the prefill)
    prefill_calls: int
    decode_steps: int
    runs: int  # traced process runs with generations
    generations: tuple[GenerationFigures, ...] = field(metadata=SKIP)  # of the traced runs (their count is written)
    untraced: tuple[GenerationFigures, ...] = field(default=(), metadata=SKIP)  # of the untraced runs

    # the manifest's `summary.llm`: the workload, then the medians over the generations and the highest memory
    LAYOUT: ClassVar[Layout] = Layout(derived=(
        ("generations", "generation_count"), ("ttft_ms_p50", "ttft_ms"), ("prefill_tokens_per_s_p50", "prefill_tokens_per_s"),
        ("decode_tokens_per_s_p50", "decode_tokens_per_s"),
        ("untraced_decode_tokens_per_s_p50", "untraced_decode_tokens_per_s"), ("decode_step_ms_p50", "step_ms"),
        "rss_prefill_kb", "pss_prefill_kb", "rss_decode_kb", "pss_decode_kb"))

    @property
    def generation_count(self) -> int:
        return len(self.generations)

    @property
    def ttft_ms(self) -> float | None:
        return median([g.ttft_ms for g in self.generations])

    @property
    def prefill_tokens_per_s(self) -> float | None:
        return median([g.prefill_tokens_per_s for g in self.generations])

    @property
    def decode_tokens_per_s(self) -> float | None:
        return median([g.decode_tokens_per_s for g in self.generations if g.decode_ms > 0])

    @property
    def untraced_decode_tokens_per_s(self) -> float | None:
        return median([g.decode_tokens_per_s for g in self.untraced if g.decode_ms > 0])

    @property
    def untraced_ttft_ms(self) -> float | None:
        return median([g.ttft_ms for g in self.untraced])

    @property
    def step_ms(self) -> tuple[float, ...]:
        """The median latency of each decode step (step i over every generation): the per-step chart."""
        steps = [g.decode_step_ms for g in self.generations if len(g.decode_step_ms) == self.decode_steps]
        return tuple(m for i in range(self.decode_steps) if (m := median([s[i] for s in steps])) is not None)

    def memory_kb(self, name: str) -> int | None:
        """The highest of a memory figure (`rss_prefill_kb`, `pss_decode_kb`, ...) over the generations, None
        when the device could not tell."""
        values = [v for g in (*self.generations, *self.untraced) if (v := getattr(g, name)) >= 0]
        return max(values) if values else None

    # the highest of each memory figure, as the codec writes them into `summary.llm`
    rss_prefill_kb = _highest("rss_prefill_kb")
    pss_prefill_kb = _highest("pss_prefill_kb")
    rss_decode_kb = _highest("rss_decode_kb")
    pss_decode_kb = _highest("pss_decode_kb")


def llm_figures(runs: Sequence[ProcessRun]) -> LlmFigures | None:
    """The figures of a model's runs; None for a model that did not generate."""
    first = next((r.llm for r in runs if r.llm is not None), None)
    if first is None:
        return None
    traced = [r for r in runs if r.traced and r.llm is not None]
    return LlmFigures(prompt_len=first.prompt_len, gen_len=first.gen_len, prefill_calls=first.prefill_calls,
                      decode_steps=first.decode_steps, runs=len(traced), generations=tuple(generations(runs)),
                      untraced=tuple(generations(runs, traced=False)))


def llm_summary(runs: Sequence[ProcessRun]) -> dict[str, Any]:
    """`{"llm": {...}}` for the manifest's derived summary of an LLM; {} for another model."""
    figures = llm_figures(runs)
    return {} if figures is None else {"llm": encode(figures)}


def metric_runs(runs: Sequence[ProcessRun], metric: str) -> list[tuple[float, ...]]:
    """Per traced process run, the samples a verdict on `metric` compares (see `metric_samples`)."""
    return metric_samples([r.llm for r in runs if r.traced and r.llm is not None], metric)


def metric_samples(runs: Iterable[LlmRunFigures | None], metric: str) -> list[tuple[float, ...]]:
    """Per process run (its `llm` figures), the samples a verdict on `metric` compares, as times (lower
    is faster): TTFT in ms per generation; for the decode rate, decode ms per generated token (its
    reciprocal: verdicts/llm_metrics.py turns the ratio back into a rate). Runs without any are left out."""
    out = []
    for llm in runs:
        if llm is None:
            continue
        if metric == TTFT:
            samples = tuple(g.ttft_ms for g in llm.generations)
        else:
            steps = llm.decode_steps
            samples = tuple(g.decode_ms / steps for g in llm.generations if steps > 0 and g.decode_ms > 0)
        if samples:
            out.append(samples)
    return out


def generation_key(job: Job, model: str) -> tuple[int | None, int, int] | None:
    """What an LLM generated in a job (prompt length, or None for a prompt file; prompt seed; requested
    generation length): two runs compare only when they generated alike. None for a model that did not."""
    for _, result in job.results():
        if result.name == model:
            llm = next((r.llm for r in result.runs if r.llm is not None), None)
            if llm is not None:
                seed = llm.prompt_seed
                return (llm.prompt_len if seed is not None else None, seed if seed is not None else -1,
                        llm.requested_gen_len)
    return None
