"""Roll-ups people know from profilers: time per module subtree and a summary by op type, per (device, model).

From one (device, model)'s stats rows, the execute block only (what one execution costs), each op's MEAN
time per execution (means add up; medians do not) is put where its identity says it is in the user's model
(profiles/op_identity.py):

- `module_tree`: a call tree as a profiler shows it: per module, `self_ms` (its own ops) and `total_ms`
  (its ops and every submodule's), `(model)` at the root holding every op; an op its identity cannot place
  in a module (a delegate's kernel the map could not name) is the root's own time;
- `op_type_summary`: what TFLite's benchmark_model prints as "Summary by node type": per op type
  (`convolution`, an XNNPACK family where only the delegate knows), how many ran, their total time and its
  share of all op time, biggest first.

A delegate call is left out when its kernels are listed (they are its time: counting both would count
twice); framework events (Method::execute, OPERATOR_CALL) are no op. Torch-free and numpy-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.profiles.op_identity import DELEGATE_CALL, FRAMEWORK_NAMES
from orchestrator.profiles.stat_rows import StatRow, csv_line

EXECUTE_BLOCK = "Execute"
ROOT = "(model)"


@dataclass(frozen=True)
class ModuleTime:
    """One module of the call tree: its own ops' time and its subtree's (ms per execution, means)."""

    module: str  # `features.3`; ROOT for the model itself
    depth: int  # 0 for the root, 1 for `features`, 2 for `features.3`
    self_ms: float
    total_ms: float
    ops: int  # ops in the subtree
    share: float | None  # total / all op time (None when no op time was measured)


@dataclass(frozen=True)
class OpTypeTime:
    """One op type: how many ran, their total mean time per execution and its share of all op time."""

    op_type: str
    count: int
    total_ms: float
    share: float | None


@dataclass(frozen=True)
class Rollup:
    """Both roll-ups of one (device, model)."""

    device: str
    model: str
    modules: tuple[ModuleTime, ...]  # depth-first, children by total time, biggest first
    op_types: tuple[OpTypeTime, ...]  # biggest first

    @property
    def op_ms(self) -> float:
        return self.modules[0].total_ms if self.modules else 0.0


def timed_ops(rows: Sequence[StatRow]) -> list[StatRow]:
    """The execute block's ops whose times add up: no framework event, no delegate call whose kernels are listed."""
    executed = [r for r in rows if r.event_block == EXECUTE_BLOCK]
    kernels_listed = any(r.is_delegated_op for r in executed)
    return [r for r in executed if r.event_name not in FRAMEWORK_NAMES
            and not (r.event_name == DELEGATE_CALL and kernels_listed) and r.identity.is_op]


def module_tree(rows: Sequence[StatRow]) -> tuple[ModuleTime, ...]:
    """The call tree of one (device, model)'s ops: self and total time per module, depth-first."""
    own: dict[str, float] = {ROOT: 0.0}
    counts: dict[str, int] = {ROOT: 0}
    for row in timed_ops(rows):
        module = row.identity.module_path or ROOT
        own[module] = own.get(module, 0.0) + (row.avg_ms or 0.0)
        counts[module] = counts.get(module, 0) + 1
        for ancestor in _ancestors(module):
            own.setdefault(ancestor, 0.0)
            counts.setdefault(ancestor, 0)
    total = {m: sum(v for n, v in own.items() if n == m or _under(n, m)) for m in own}
    ops = {m: sum(c for n, c in counts.items() if n == m or _under(n, m)) for m in own}
    everything = total[ROOT]
    out: list[ModuleTime] = []

    def visit(module: str, depth: int) -> None:
        out.append(ModuleTime(module, depth, own[module], total[module], ops[module],
                              total[module] / everything if everything > 0 else None))
        for child in sorted(_children(module, own), key=lambda c: (-total[c], c)):
            visit(child, depth + 1)

    visit(ROOT, 0)
    return tuple(out)


def op_type_summary(rows: Sequence[StatRow]) -> tuple[OpTypeTime, ...]:
    """Per op type: count, total mean time per execution and share of all op time, biggest first."""
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row in timed_ops(rows):
        kind = row.identity.op_name
        totals[kind] = totals.get(kind, 0.0) + (row.avg_ms or 0.0)
        counts[kind] = counts.get(kind, 0) + 1
    everything = sum(totals.values())
    return tuple(OpTypeTime(kind, counts[kind], totals[kind], totals[kind] / everything if everything > 0 else None)
                 for kind in sorted(totals, key=lambda k: (-totals[k], k)))


def rollup(device: str, model: str, rows: Sequence[StatRow]) -> Rollup:
    return Rollup(device, model, module_tree(rows), op_type_summary(rows))


def _ancestors(module: str) -> list[str]:
    """`features.3` -> [`features`, ROOT]; ROOT has none."""
    if module == ROOT:
        return []
    parts = module.split(".")
    return [".".join(parts[:k]) for k in range(len(parts) - 1, 0, -1)] + [ROOT]


def _under(module: str, ancestor: str) -> bool:
    return module != ancestor and (ancestor == ROOT or module.startswith(ancestor + "."))


def _children(module: str, known: dict[str, float]) -> list[str]:
    depth = 0 if module == ROOT else module.count(".") + 1
    return [m for m in known if m != ROOT and _under(m, module) and m.count(".") == depth]


ROLLUP_COLUMNS = ("device", "model", "kind", "name", "depth", "count", "self_ms", "total_ms", "share")
MODULE, OP_TYPE = "module", "op_type"


def rollups_csv(rollups: Sequence[Rollup]) -> str:
    """rollups.csv: per (device, model), its module tree (kind `module`, depth-first) then its op types (kind
    `op_type`; self_ms empty), times in ms per execution (means), share of all op time."""
    lines = [csv_line(ROLLUP_COLUMNS)]
    for r in rollups:
        lines += [csv_line([r.device, r.model, MODULE, m.module, m.depth, m.ops, repr(m.self_ms), repr(m.total_ms),
                            "" if m.share is None else repr(m.share)]) for m in r.modules]
        lines += [csv_line([r.device, r.model, OP_TYPE, t.op_type, "", t.count, "", repr(t.total_ms),
                            "" if t.share is None else repr(t.share)]) for t in r.op_types]
    return "".join(lines)
