"""Per-op statistics of a report, from the run's stats.csv rows: each device's slowest events, its time per op
group, and the ops side by side across devices (docs/architecture.md, "Reports").

Across devices an op is joined by its identity (profiles/op_identity.py: module path, ATen op, occurrence),
never by its kernel's name: XNNPACK names one convolution `... F32 IGEMM` on x86 and `... PF32 IGEMM` on
aarch64. Each device's ratio to the baseline has its interval over process runs (ratios.py), from the
op's per-run samples: the run's samples file (results/samples.py), or its ETDumps where the run directory has none
(verdicts/op_samples.py), when they are at hand.

Every share is of the method's mean execute time; DELEGATE_CALL is left out when its delegate's
kernels are listed (shares would count twice); an event under the timer's resolution is marked so
(`below_resolution`) and given no share, in the pages as in the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from orchestrator.base.errors import EtfarmError
from orchestrator.profiles.op_identity import DELEGATE_CALL, FRAMEWORK_NAMES, OpIdentity, event_group
from orchestrator.profiles.source import telling_source_lines
from orchestrator.profiles.stat_rows import StatRow
from orchestrator.report.builders.ratios import ratio_with_ci
from orchestrator.report.model import DeviceOps, Interval, OpRatioRow, OpStat
from orchestrator.results.model import ModelResult
from orchestrator.results.record import RunRecord
from orchestrator.run.runner_contract import ETDUMP_NAME
from orchestrator.verdicts.op_samples import read_op_samples, recorded_op_samples

TOP_OPS = 10  # slowest events listed per device
RATIO_ROWS = 15  # events in the op x device ratio table
GROUPS_SHOWN = 8  # op groups in the stacked chart; the rest joins "other"
NOT_OPS = FRAMEWORK_NAMES
# A run directory without samples.npz: its ETDumps are read again for the op ratios' intervals up to this much per
# device (an LLM's run more: no interval). With samples.npz there is no such cap: reading it is cheap.
OP_RUNS_MAX_BYTES = 256 << 20
KERNEL_RESOLUTION_MS = 0.001  # XNNPACK's kernel events are timed in whole microseconds

PerDevice = Mapping[str, tuple[list[OpStat], float | None]]  # device -> (its op events, the method's mean execute ms)
OpKey = tuple[str, OpIdentity]  # (event block, the op's identity): the same on every device
OpRuns = Mapping[str, Mapping[OpKey, Sequence[Sequence[float]]]]  # device -> op -> its samples per process run


op_group = event_group  # an event's op group: its name without `#k` (profiles/op_identity.py)


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
                op=r.identity.label,
                op_key=r.identity,
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


def op_ratios(devices: list[str], baseline: str | None, per_device: PerDevice,
              runs: OpRuns | None = None) -> tuple[OpRatioRow, ...]:
    """The slowest ops by p50 (their largest p50 on any device), joined across devices by identity: p50 per
    device, ratio to the baseline's with its interval (given each op's `runs`): the table sorts by and shows the
    same statistic."""
    keyed = {dev: {_key(op): op for op in ops} for dev, (ops, _) in per_device.items()}
    weight: dict[OpKey, float] = {}
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
        first = next(op for op in ops if op)
        rows.append(OpRatioRow(block=key[0], index=first.index, name=first.op or first.name,
                               module_path=next((op.module_path for op in ops if op and op.module_path), ""),
                               p50_ms=tuple(op.p50_ms if op else None for op in ops), ratio=ratio,
                               below_resolution=below, kernels=tuple(op.name if op else "" for op in ops),
                               ratio_ci=_intervals(devices, baseline, key, ratio, runs or {}),
                               basis=key[1].basis))
    return tuple(rows)


def _key(op: OpStat) -> OpKey:
    return op.block, op.op_key if op.op_key is not None else OpIdentity("", op.name, basis="event")


def _intervals(devices: list[str], baseline: str | None, key: OpKey, ratio: tuple[float | None, ...],
               runs: OpRuns) -> tuple[Interval | None, ...]:
    """Per device, the interval of its ratio to the baseline: None for the baseline, a ratio not stated, or too
    few runs with samples."""
    base = runs.get(baseline or "", {}).get(key)
    out: list[Interval | None] = []
    for device, value in zip(devices, ratio, strict=True):
        mine = runs.get(device, {}).get(key)
        out.append(ratio_with_ci(mine, base)[1] if value is not None and device != baseline and mine and base else None)
    return tuple(out)


def _p50_below(op: OpStat) -> bool:
    return below_resolution(op.p50_ms, op.delegated)


def device_op_runs(run: RunRecord, device: str, result: ModelResult, rows: Sequence[StatRow]) -> dict[OpKey, list[Any]]:
    """One device's per-op samples per traced process run, keyed as its rows' identities, from the run's samples file,
    else from the runs' ETDumps ({} when there are none, more than OP_RUNS_MAX_BYTES, or unreadable: the ratios then
    have no interval)."""
    identities = {row.key: row.identity for row in rows}
    labels = [r.label for r in result.traced_runs]
    recorded = recorded_op_samples([(run, label) for label in labels], device, result.name, identities)
    if labels and recorded is not None:
        return {key: runs for key, (_, runs) in recorded.ops.items()}
    # A run directory written before samples.npz: the ETDumps, read again.
    paths = [run.root / a for r in result.traced_runs for a in r.artifacts if Path(a).name == ETDUMP_NAME]
    paths = [p for p in paths if p.is_file()]
    if not paths or sum(p.stat().st_size for p in paths) > OP_RUNS_MAX_BYTES:
        return {}
    try:
        found = read_op_samples(paths, identities)
    except EtfarmError:
        return {}
    return {key: runs for key, (_, runs) in found.ops.items()}
