"""What took the CPU away from the model during a process run, measured by the runner, and the one rule that
says which measured executions are contaminated by it.

The runner reads the kernel's scheduler statistics itself (runners/etfarm_sched.h): before and after each
measured execution, outside the timed region, the run-queue wait of every thread of its process
(`/proc/self/task/*/schedstat`, second field: ns spent runnable but not running; XNNPACK's threadpool
workers included); before and after the measured loop, the process's CPU time, involuntary context
switches (getrusage) and migrations (`/proc/self/task/*/sched`, `nr_migrations`). `Contention` is that,
typed; older runners report none and their runs have `contention = None` (every execution then counts as
clean: nothing was measured, nothing is dropped).

The rule (`clean_mask`): an execution whose threads waited on a run queue for more than
max(WAIT_FLOOR_MS, WAIT_SHARE x its time) was slowed by something else sharing its CPU, and statistics
leave it out. Why those bounds: a runnable thread that nothing delays still waits a little, because
waking a worker costs an IPI and the idle CPU's exit (a few us per wake-up, a handful per execution on
this 2-vCPU VM, measured in benchmarks/README.md "Contention"); a neighbour that takes the CPU takes it
for a whole time slice (0.75-4 ms under CFS), so a contended execution waits hundreds of us at least.
50 us is above the quiet wake-up cost and far below one slice; 2 % of the execution keeps a long model's
quiet wake-ups (more ops, more wake-ups) from counting as contention while any slice it lost is still
well above it. A wait below the bound moves the execution by at most that much, within the noise.

Execution k and the ETDump: warmup executions are not traced (runners/etfarm_tracer.h pauses the tracer),
so a traced run's ETDump holds the method-load block, then exactly one block per measured execution, in
order: `execute_ms[k]`, `wait_ms[k]` and the k-th instance of the method's block (`iteration` k of
profiles/analysis_core.SampleSet, 0-based, within its run's file) are the same execution. In generation
mode (an LLM) execution k is generation k, which spans its prefill calls and decode steps: blocks
k x (prefill_calls + decode_steps) up to the next generation's first, of the forward method's group.
Per-op statistics drop the same iterations by this mapping (`ProcessRun.clean`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from orchestrator.base.codec import Layout
from orchestrator.base.stats import median

__all__ = ["WAIT_FLOOR_MS", "WAIT_SHARE", "Contention", "ContentionSummary", "clean_mask", "contention_summary",
           "contention_text", "wait_bound_ms"]

WAIT_FLOOR_MS = 0.05  # 50 us: above a quiet execution's wake-up waits, far below one time slice
WAIT_SHARE = 0.02  # 2 % of the execution: a long model's many quiet wake-ups stay under it


@dataclass(frozen=True)
class Contention:
    """What the runner measured of the CPU it did not get, over one process run's measured executions.

    `wait_ms` is aligned one to one with `ProcessRun.execute_ms`. A figure the device could not read is None
    (no schedstats: a kernel without CONFIG_SCHEDSTATS, a restricted /proc); an empty `wait_ms` means the
    per-execution wait was unreadable."""

    wait_ms: tuple[float, ...] = ()  # run-queue wait of all the runner's threads during each measured execution
    cpu_ms: float | None = None  # CPU time of all threads over the measured executions (schedstat, else rusage)
    wall_ms: float | None = None  # wall time over the same span (first execution's start to last one's end)
    involuntary_switches: int | None = None  # preemptions of any thread over the measured executions (rusage)
    migrations: int | None = None  # moves of any thread to another CPU over the measured executions
    threads: int | None = None  # threads of the runner read (main + threadpool workers)
    read_ms: float | None = None  # what reading all of this cost the runner (outside the timed region)

    @property
    def wait_total_ms(self) -> float:
        return sum(self.wait_ms)

    @property
    def cpu_share(self) -> float | None:
        """CPU time over wall time: 1.0 is one thread always running; above 1 with worker threads."""
        if self.cpu_ms is None or not self.wall_ms:
            return None
        return self.cpu_ms / self.wall_ms


def wait_bound_ms(execute_ms: float) -> float:
    """The most an execution of `execute_ms` may wait for a CPU and still count as clean."""
    return max(WAIT_FLOOR_MS, WAIT_SHARE * execute_ms)


def clean_mask(execute_ms: Sequence[float], wait_ms: Sequence[float]) -> tuple[bool, ...]:
    """Per execution, True when it did not wait for a CPU beyond `wait_bound_ms`: the one rule.

    Without per-execution waits (`wait_ms` empty: an older runner, or unreadable) every execution counts
    as clean. Waits that do not match the executions one to one are a broken result: ValueError."""
    if not wait_ms:
        return (True,) * len(execute_ms)
    if len(wait_ms) != len(execute_ms):
        raise ValueError(f"{len(wait_ms)} waits for {len(execute_ms)} executions")
    return tuple(w <= wait_bound_ms(ms) for ms, w in zip(execute_ms, wait_ms, strict=True))


@dataclass(frozen=True)
class ContentionSummary:
    """How contended one (device, model) was over its process runs: what a job reports per device.

    Figures are None when no run measured them (an older runner, a device without schedstats)."""

    executions: int = 0  # measured executions with a per-execution wait
    contended: int = 0  # of them, those `clean_mask` drops
    wait_ms_p50: float | None = None  # median run-queue wait per execution
    wait_ms_max: float | None = None
    cpu_over_wall: float | None = None  # CPU time over wall time of the measured executions, all runs
    involuntary_switches: int | None = None  # summed over the runs
    migrations: int | None = None

    @property
    def contended_share(self) -> float | None:
        """The share of measured executions dropped as contended; None when nothing was measured."""
        return self.contended / self.executions if self.executions else None

    LAYOUT: ClassVar[Layout] = Layout(derived=("contended_share",), order=(
        "executions", "contended", "contended_share", "wait_ms_p50", "wait_ms_max", "cpu_over_wall",
        "involuntary_switches", "migrations"))


def contention_text(summary: ContentionSummary) -> str | None:
    """`25 of 60 executions waited for a CPU (42%), wait p50 0.012 ms, max 27.7 ms; CPU/wall 0.38`: how every
    summary and page words a model's contention; None when nothing was measured."""
    if not summary.executions:
        return None
    text = (f"{summary.contended} of {summary.executions} executions waited for a CPU "
            f"({summary.contended / summary.executions:.0%}), wait p50 {summary.wait_ms_p50:.3g} ms, "
            f"max {summary.wait_ms_max:.3g} ms")
    return text + (f"; CPU/wall {summary.cpu_over_wall:.2f}" if summary.cpu_over_wall is not None else "")


def contention_summary(measured: Sequence[tuple[Sequence[float], Contention | None]]) -> ContentionSummary:
    """The summary over process runs given as `(execute_ms, contention)` each."""
    timed = [(ex, c) for ex, c in measured if c is not None and c.wait_ms]
    waits = [w for _, c in timed for w in c.wait_ms]
    known = [c for _, c in measured if c is not None]
    spans = [(c.cpu_ms, c.wall_ms) for c in known if c.cpu_ms is not None and c.wall_ms]
    return ContentionSummary(
        executions=len(waits), contended=sum(not ok for ex, c in timed for ok in clean_mask(ex, c.wait_ms)),
        wait_ms_p50=median(waits), wait_ms_max=max(waits, default=None),
        cpu_over_wall=sum(cpu for cpu, _ in spans) / sum(wall for _, wall in spans) if spans else None,
        involuntary_switches=_total(c.involuntary_switches for c in known),
        migrations=_total(c.migrations for c in known))


def _total(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None
