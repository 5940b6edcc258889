"""Where a per-op verdict's op is in the user's model: its identity (the key sides are joined by), module path and
source line, from the run's stats.csv.

With the program's .pte, XNNPACK kernels have their own module path (profiles/kernel_map.py), so a
per-op verdict says "features.3 regressed", not "a delegate's kernel #2".
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.base.errors import AnalysisError, DataError
from orchestrator.profiles.file_memo import FileMemo, file_key
from orchestrator.profiles.op_identity import OpIdentity
from orchestrator.profiles.stat_rows import StatRow, group_rows, read_stats_csv
from orchestrator.run.rundir import STATS

if TYPE_CHECKING:
    from orchestrator.verdicts.compare import OpVerdict


def ops_where(run_dir: Path) -> dict[tuple[str, str], dict[tuple[str, int], tuple[str, str]]]:
    """(device, model) -> (event_block, event_index) -> (module path, source line), from the run's stats.csv (read
    once with the sides' identities: `_grouped`)."""
    try:
        grouped = _grouped(run_dir / STATS)
    except (DataError, AnalysisError):
        return {}
    return {pair: {row.key: (row.module_path or "", row.source_line or "") for row in rows}
            for pair, rows in grouped.items()}


def located(ops: tuple[OpVerdict, ...], where: dict[tuple[str, int], tuple[str, str]]) -> tuple[OpVerdict, ...]:
    return tuple(replace(op, module_path=found[0], source_line=found[1])
                 if (found := where.get((op.event_block, op.event_index))) else op for op in ops)


SideIdentities = tuple[tuple[tuple[str, int], OpIdentity], ...]  # ((event_block, event_index), identity), hashable


def side_identities(run_dir: Path, device: str, model: str) -> SideIdentities:
    """Each event's op identity for one (device, model) of a run (() when its stats.csv has none or is unreadable:
    the side's ops are then keyed by their names)."""
    try:
        grouped = _grouped(run_dir / STATS)
    except (DataError, AnalysisError):  # unreadable, or gone: keyed by names
        return ()
    return tuple((row.key, row.identity) for row in grouped.get((device, model), ()))


def _grouped(path: Path) -> dict[tuple[str, str], tuple[StatRow, ...]]:
    return _GROUPED.get([file_key(path)], lambda: group_rows(read_stats_csv(path)))


# A run's stats.csv grouped, kept while the file is unchanged: a night reads one run's sides many times.
_GROUPED: FileMemo[dict[tuple[str, str], tuple[StatRow, ...]]] = FileMemo()
