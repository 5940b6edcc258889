"""Where a per-op verdict's op is in the user's model: its identity (the key sides are joined by), module path and
source line, from the run's stats.csv.

With the program's .pte, XNNPACK kernels have their own module path (profiles/kernel_map.py), so a
per-op verdict says "features.3 regressed", not "a delegate's kernel #2".
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from orchestrator.profiles.op_identity import OpIdentity

if TYPE_CHECKING:
    from orchestrator.results.record import RunRecord
    from orchestrator.verdicts.compare import OpVerdict


def ops_where(run: RunRecord) -> dict[tuple[str, str], dict[tuple[str, int], tuple[str, str]]]:
    """(device, model) -> (event_block, event_index) -> (module path, source line), from the run's stats.csv (read
    once with the sides' identities: `RunRecord.stats`)."""
    return {pair: {row.key: (row.module_path or "", row.source_line or "") for row in rows}
            for pair, rows in run.stats_or_none().items()}


def located(ops: tuple[OpVerdict, ...], where: dict[tuple[str, int], tuple[str, str]]) -> tuple[OpVerdict, ...]:
    return tuple(replace(op, module_path=found[0], source_line=found[1])
                 if (found := where.get((op.event_block, op.event_index))) else op for op in ops)


SideIdentities = tuple[tuple[tuple[str, int], OpIdentity], ...]  # ((event_block, event_index), identity), hashable


def side_identities(run: RunRecord, device: str, model: str) -> SideIdentities:
    """Each event's op identity for one (device, model) of a run (() when its stats.csv has none or is unreadable:
    the side's ops are then keyed by their names)."""
    return tuple((row.key, row.identity) for row in run.stats_or_none().get((device, model), ()))
