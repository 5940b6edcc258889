"""One rule for which samples a model's statistics keep: those of its clean executions.

The finisher applies it to the statistics it has just computed; `etfarm store import` applies it to the samples
it reads back from the ETDumps of a finished run, so a run stored from memory and one imported from its
directory hold the same samples (profiles/contended.py says how a sample is matched to its execution).
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.profiles.analysis_core import SampleSet
from orchestrator.profiles.contended import drop_contended, left_out
from orchestrator.profiles.phases import RunCalls
from orchestrator.profiles.stat_rows import ModelStats, subset
from orchestrator.results.model import ProcessRun


def run_calls(runs: Sequence[ProcessRun]) -> dict[str, RunCalls]:
    """How each traced run of an LLM called forward, by label (profiles/phases.py); {} for other models."""
    return {r.label: RunCalls(r.llm.prefill_calls, r.llm.decode_steps, len(r.llm.generations))
            for r in runs if r.traced and r.llm is not None}


def clean_only(stats: ModelStats, runs: Sequence[ProcessRun]) -> ModelStats:
    """`stats` without the samples of the executions that waited for a CPU (results/contention.py), each row
    counting what it left out; unchanged where contention was not measured."""
    return drop_contended(stats, *_measured(runs))


def clean_samples(samples: SampleSet, runs: Sequence[ProcessRun]) -> SampleSet:
    """The samples `clean_only` keeps, without recomputing any statistics (what a store import needs)."""
    clean, calls = _measured(runs)
    drop = left_out(samples, clean, calls) if clean and samples.duration_ms.size else None
    return samples if drop is None else subset(samples, ~drop)


def _measured(runs: Sequence[ProcessRun]) -> tuple[dict[str, tuple[bool, ...]], dict[str, int]]:
    """Per traced run whose contention was measured, which executions were clean; per LLM run, calls per execution."""
    measured = {r.label: r.clean for r in runs if r.traced and r.contention is not None}
    return measured, {label: c.per_generation for label, c in run_calls(runs).items()}
