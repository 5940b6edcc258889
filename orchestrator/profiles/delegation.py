"""Delegation coverage of one (device, model) (docs/guide/model-zoo.md, "Delegation coverage"): the share of op
time in delegated kernels against the portable (or optimized) kernels the runtime ran itself, and which ATen
ops stayed outside the delegate: the first question when a model is slow ("what did XNNPACK not take?").

From the execute block's timed ops (rollups.timed_ops: means per execution, a delegate call counted through
its kernels when they are listed): an event is delegated when Inspector says so (`is_delegated_op`) or it is
the delegate call itself; every other op ran outside the delegate, named by its ATen op when the ETRecord
links it (`aten.add.Tensor`), else by its event name (`native_call_add.out`). Torch-free and numpy-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.profiles.op_identity import DELEGATE_CALL
from orchestrator.profiles.rollups import timed_ops
from orchestrator.profiles.stat_rows import StatRow


@dataclass(frozen=True)
class OutsideOp:
    """An op the delegate did not take: how many ran per execution and their mean time per execution."""

    op: str
    count: int
    total_ms: float


@dataclass(frozen=True)
class Coverage:
    """One (device, model): op time per execution in and outside the delegate, the outside ops biggest first."""

    device: str
    model: str
    delegated_ms: float
    outside_ms: float
    delegated_share: float | None  # of all op time (None: no op time measured); a field, so JSON carries it
    outside: tuple[OutsideOp, ...]

    @property
    def outside_share(self) -> float | None:
        return None if self.delegated_share is None else 1.0 - self.delegated_share

    def outside_text(self, limit: int = 6) -> str:
        """`aten.add.Tensor x4, aten.mean.dim` (the `limit` biggest, then how many more): or `none`."""
        if not self.outside:
            return "none"
        named = [f"{o.op}{f' x{o.count}' if o.count > 1 else ''}" for o in self.outside[:limit]]
        more = len(self.outside) - limit
        return ", ".join(named) + (f" and {more} more" if more > 0 else "")


def coverage(device: str, model: str, rows: Sequence[StatRow]) -> Coverage | None:
    """The delegation coverage of one (device, model)'s stats rows; None when no op was timed."""
    ops = timed_ops(rows)
    if not ops:
        return None
    delegated = outside = 0.0
    counts: dict[str, int] = {}
    times: dict[str, float] = {}
    for row in ops:
        ms = row.avg_ms or 0.0
        if row.is_delegated_op or row.event_name == DELEGATE_CALL:
            delegated += ms
            continue
        outside += ms
        name = row.identity.op  # the ATen op when the ETRecord links it, else the event's name
        counts[name] = counts.get(name, 0) + 1
        times[name] = times.get(name, 0.0) + ms
    listed = tuple(OutsideOp(op, counts[op], times[op]) for op in sorted(times, key=lambda o: (-times[o], o)))
    total = delegated + outside
    return Coverage(device, model, delegated, outside, delegated / total if total > 0 else None, listed)
