"""What an A/B page says around the verdicts: each pair's structure diff, baseline links, confirmations, trust notes.

Filled by report/builders/comparison.py; the page (report/page/comparison.py) shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestrator.profiles.model_structure import StructureDiff
from orchestrator.report.model.report import Report, TrustNote
from orchestrator.verdicts.compare import Comparison

if TYPE_CHECKING:
    from orchestrator.verdicts.confirmation import Confirmation


@dataclass(frozen=True)
class StructureChange:
    """One op group whose count differs between A and B (0: absent on that side)."""

    group: str
    count_a: int
    count_b: int


@dataclass(frozen=True)
class PairStructure:
    device: str
    model: str
    changes: tuple[StructureChange, ...]
    modules_a: int  # distinct module paths of the ops
    modules_b: int
    modules_added: tuple[str, ...]  # in B, not in A (the first MODULES_LISTED)
    modules_removed: tuple[str, ...]
    known: bool  # both sides had per-op statistics
    model_diff: StructureDiff | None = None  # ops, shapes, parameters, dtypes, program size (both ETRecords needed)


@dataclass(frozen=True)
class ComparisonView:
    comparison: Comparison
    title: str
    structure: tuple[PairStructure, ...]
    baseline_links: tuple[tuple[str, str, str], ...]  # (device, model, href) where the baseline has a page
    confirmations: tuple[Confirmation, ...]
    trust: tuple[tuple[str, TrustNote], ...]  # (which run, note): B's runs and each pair's baseline
    runs: tuple[Report, ...]  # B's run reports, in order
    notes: tuple[str, ...] = ()

    def href(self, device: str, model: str) -> str:
        return next((h for d, m, h in self.baseline_links if (d, m) == (device, model)), "")

    def confirmation(self, device: str, model: str) -> Confirmation | None:
        return next((c for c in self.confirmations if (c.device, c.model) == (device, model)), None)
