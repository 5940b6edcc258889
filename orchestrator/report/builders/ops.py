"""Per-op statistics of a report, from the run's stats.csv rows: each device's slowest events, its time per op
group, and the events side by side across devices (docs/architecture.md, "Reports").

Every share is of the method's mean execute time; DELEGATE_CALL is left out when its delegate's
kernels are listed (shares would count twice); an event under the timer's resolution is marked so
(`below_resolution`) and given no share, in the pages as in the terminal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from orchestrator.profiles.analysis_core import FRAMEWORK_EVENTS
from orchestrator.profiles.source import telling_source_lines
from orchestrator.profiles.stat_rows import StatRow
from orchestrator.report.model import DeviceOps, OpRatioRow, OpStat

TOP_OPS = 10  # slowest events listed per device
RATIO_ROWS = 15  # events in the op x device ratio table
GROUPS_SHOWN = 8  # op groups in the stacked chart; the rest joins "other"
NOT_OPS = frozenset({*FRAMEWORK_EVENTS, "OPERATOR_CALL"})
DELEGATE_CALL = "DELEGATE_CALL"
_INSTANCE = re.compile(r"\s*#\d+$")
KERNEL_RESOLUTION_MS = 0.001  # XNNPACK's kernel events are timed in whole microseconds

PerDevice = Mapping[str, tuple[list[OpStat], float | None]]  # device -> (its op events, the method's mean execute ms)


def op_group(name: str) -> str:
    """An event's op group: its name without its instance suffix (`Convolution (NHWC, F32) IGEMM #2` -> ... IGEMM)."""
    return _INSTANCE.sub("", name)


def below_resolution(value_ms: float, delegated: bool) -> bool:
    """An op's time under the timer's resolution: a delegate kernel's under 1 us, another op's zero."""
    return value_ms < KERNEL_RESOLUTION_MS if delegated else value_ms <= 0.0


def op_stats(rows: Sequence[StatRow]) -> tuple[list[OpStat], float | None]:
    """The operator events of one device and model, and the method's mean execute time."""
    execute = next((r.avg_ms for r in rows if r.event_name == "Method::execute"), None)
    kernels_listed = any(r.is_delegated_op for r in rows)
    ops = []
    for r in rows:
        name = r.event_name
        if name in NOT_OPS or (name == DELEGATE_CALL and kernels_listed):
            continue
        avg, p50_ms = r.avg_ms or 0.0, r.p50_ms or 0.0
        below = below_resolution(avg, bool(r.is_delegated_op))
        ops.append(
            OpStat(
                block=r.event_block,
                index=r.event_index,
                name=name,
                group=op_group(name),
                p50_ms=p50_ms,
                avg_ms=avg,
                share=avg / execute if execute and not below else None,
                module_path=r.module_path or "",
                op_types=r.op_types or "",
                delegated=bool(r.is_delegated_op),
                backend=r.delegate_backend_name or "",
                source_line=r.source_line or "",
                covers=r.delegate_covers or "",
                kernel=r.kernel_mapping or "",
                kernel_note=r.kernel_note or "",
                below_resolution=below,
            )
        )
    if not telling_source_lines(op.source_line for op in ops):  # one line for all: it tells no layer apart
        ops = [replace(op, source_line="") for op in ops]
    return ops, execute


def _groups(ops: list[OpStat], execute: float | None) -> tuple[tuple[str, float], ...]:
    totals: dict[str, float] = {}
    for op in ops:
        totals[op.group] = totals.get(op.group, 0.0) + op.avg_ms
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    shown, rest = ranked[:GROUPS_SHOWN], sum(v for _, v in ranked[GROUPS_SHOWN:])
    if execute is not None:
        rest += max(execute - sum(totals.values()), 0.0)  # framework and dispatch time
    return tuple(shown) + ((("other", rest),) if rest > 0 else ())


def device_ops(per_device: PerDevice) -> tuple[DeviceOps, ...]:
    """Per device with op events: its TOP_OPS slowest by mean, and its time per op group."""
    return tuple(DeviceOps(device=dev, top=tuple(sorted(o, key=lambda op: -op.avg_ms)[:TOP_OPS]), groups=_groups(o, ex))
                 for dev, (o, ex) in per_device.items() if o)


def op_ratios(
    devices: list[str], baseline: str | None, per_device: PerDevice
) -> tuple[OpRatioRow, ...]:
    """The slowest events by p50 (their largest p50 on any device), p50 per device, ratio to the baseline's:
    the table sorts by and shows the same statistic."""
    keyed = {dev: {(op.block, op.index, op.name): op for op in ops} for dev, (ops, _) in per_device.items()}
    weight: dict[tuple[str, int, str], float] = {}
    for ops in keyed.values():
        for key, op in ops.items():
            weight[key] = max(weight.get(key, 0.0), op.p50_ms)
    chosen = sorted(weight, key=lambda k: -weight[k])[:RATIO_ROWS]
    base = keyed.get(baseline or "", {})
    rows = []
    for key in chosen:
        ops = [keyed.get(dev, {}).get(key) for dev in devices]
        ref = base.get(key)
        below = tuple(bool(op and _p50_below(op)) for op in ops)
        ratio = tuple(op.p50_ms / ref.p50_ms if op and ref and not _p50_below(op) and not _p50_below(ref) else None
                      for op in ops)
        module = next((op.module_path for op in ops if op and op.module_path), "")
        rows.append(OpRatioRow(block=key[0], index=key[1], name=key[2], module_path=module,
                               p50_ms=tuple(op.p50_ms if op else None for op in ops), ratio=ratio,
                               below_resolution=below))
    return tuple(rows)


def _p50_below(op: OpStat) -> bool:
    return below_resolution(op.p50_ms, op.delegated)
