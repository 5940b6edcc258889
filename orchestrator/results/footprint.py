"""Memory by owner (issue 39): who holds a model's resident memory on a device, typed.

The runner (runners/memory_owner.h) prints a `memory` object in its result line: for the moment after
the method load and the moment after the measured executions, the bytes of each owner:

- `program`  the .pte as loaded, at its peak (the flatbuffer, and each delegate segment while its backend
             initialises from it): counted by the runner's data loader;
- `planned`  the method's memory-planned buffers: counted (MethodMeta);
- `runtime`  the method and temp allocators at their peak: counted;
- `delegate` what a backend allocates itself (XNNPACK's packed weights and workspace): the growth of the
             resident set (/proc/self/statm) around the method load, less what was counted there, plus
             the executions' growth less the allocators' when the method calls a delegate (untraced);
- `other`    the resident set before the program load (runner, libraries, threadpool), plus the
             executions' growth that no delegate explains (the event tracer's buffers in a traced run).

`counted` and `delta` in the object say which figures are which. The owners add up to the peak RSS
(VmHWM) within the pages no owner holds (allocator slack, pages freed before the peak was read).
A model's figure in the manifest (`devices.<d>.models.<m>.memory`, `ModelMemory`) is the split of one
of its process runs: the untraced run with the median peak RSS (the traced ones when it has none),
so that its owners and its peak come from the same process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from orchestrator.base.codec import FieldError, decode

if TYPE_CHECKING:
    from orchestrator.results.model import ProcessRun

__all__ = ["OWNERS", "Footprint", "MemorySplit", "ModelMemory", "Owners", "RunnerMemory", "model_memory"]

OWNERS = ("program", "planned", "delegate", "runtime", "other")
MAX_BYTES = 1 << 50  # the runner contract's cap on any size


@dataclass(frozen=True)
class Owners:
    """Bytes held by each owner at one moment."""

    program: int = 0
    planned: int = 0
    delegate: int = 0
    runtime: int = 0
    other: int = 0

    @property
    def total(self) -> int:
        return sum(getattr(self, name) for name in OWNERS)

    def items(self) -> tuple[tuple[str, int], ...]:
        return tuple((name, getattr(self, name)) for name in OWNERS)


@dataclass(frozen=True)
class MemorySplit:
    """The runner's split at one moment, bytes; -1 where the device could not tell (no /proc)."""

    program: int = -1
    planned: int = -1
    delegate: int = -1
    runtime: int = -1
    other: int = -1
    rss: int = -1  # the resident set at that moment
    peak_rss: int = -1  # VmHWM at that moment

    @property
    def known(self) -> bool:
        return all(getattr(self, name) >= 0 for name in OWNERS)

    def owners(self) -> Owners:
        return Owners(**{name: getattr(self, name) for name in OWNERS})


@dataclass(frozen=True)
class RunnerMemory:
    """The result line's `memory` object (runners/memory_owner.h)."""

    counted: tuple[str, ...] = ()
    delta: tuple[str, ...] = ()
    source: str = ""  # where the resident set was read: statm
    delegated: bool = False  # the method calls a delegate
    load: MemorySplit = MemorySplit()
    end: MemorySplit = MemorySplit()

    @classmethod
    def checked(cls, raw: Any) -> RunnerMemory:
        """The object as the runner printed it; ValueError naming what does not hold."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"memory is {type(raw).__name__}, not an object")
        try:
            memory = decode(cls, raw)
        except FieldError as exc:
            raise ValueError(f"memory.{exc}") from None
        for moment in ("load", "end"):
            split = getattr(memory, moment)
            for f in fields(MemorySplit):
                if not -1 <= getattr(split, f.name) <= MAX_BYTES:
                    raise ValueError(f"memory.{moment}.{f.name} is {getattr(split, f.name)}: outside [-1, {MAX_BYTES}]")
        if set(memory.counted) | set(memory.delta) != set(OWNERS) or set(memory.counted) & set(memory.delta):
            raise ValueError(f"memory names counted {list(memory.counted)} and delta {list(memory.delta)}: "
                             f"each of {', '.join(OWNERS)} must be one or the other")
        return memory


@dataclass(frozen=True)
class Footprint:
    """Owners and the peak at one moment of one process run."""

    by_owner: Owners = Owners()
    peak_rss_bytes: int | None = None
    rss_bytes: int | None = None

    @classmethod
    def of(cls, split: MemorySplit) -> Footprint:
        return cls(split.owners(), split.peak_rss if split.peak_rss >= 0 else None, split.rss if split.rss >= 0 else None)


@dataclass(frozen=True)
class ModelMemory:
    """`devices.<d>.models.<m>.memory`: by owner after the executions, the peak, and the split after load."""

    by_owner: Owners = Owners()
    peak_rss_bytes: int | None = None
    after_load: Footprint = Footprint()
    counted: tuple[str, ...] = ()  # owners the runner counted ...
    delta: tuple[str, ...] = ()  # ... and owners measured as the process's memory delta
    run: str = ""  # the process run these figures are from

    @property
    def owners_over_peak(self) -> float | None:
        """The owners' sum over the peak RSS: 1.0 when they explain it exactly."""
        if not self.peak_rss_bytes:
            return None
        return self.by_owner.total / self.peak_rss_bytes


def model_memory(runs: Sequence[ProcessRun]) -> ModelMemory | None:
    """A model's memory by owner from its process runs (see the module docstring); None when no run has one."""
    known = [r for r in runs if r.memory is not None and r.memory.end.known and r.memory.load.known]
    pool = [r for r in known if not r.traced] or known
    if not pool:
        return None
    ranked = sorted(pool, key=lambda r: r.memory.end.peak_rss if r.memory is not None else 0)
    chosen = ranked[(len(ranked) - 1) // 2]
    memory = chosen.memory
    assert memory is not None
    end = Footprint.of(memory.end)
    return ModelMemory(end.by_owner, end.peak_rss_bytes, Footprint.of(memory.load), memory.counted, memory.delta,
                       chosen.label)
