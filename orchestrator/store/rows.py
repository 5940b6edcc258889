"""Typed rows of the store that readers get back (kept free of numpy at import: `history` starts fast)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

STAT_FIELDS = ("min_ms", "p10_ms", "p50_ms", "p90_ms", "avg_ms", "max_ms", "std_ms")
# Event metadata carried from the analysis (or stats.csv) into the store, when present.
META_FIELDS = ("delegate_debug_identifier", "op_types", "delegate_backend_name", "module_path", "source_line",
               "delegate_covers", "kernel_mapping", "kernel_note")


@dataclass(frozen=True, eq=False)
class EventRow:
    """One event of one (device, model): identity, what it is in the model, statistics, raw samples."""

    device: str
    model: str
    event_block: str
    event_index: int
    event_name: str
    samples: int
    stats: Mapping[str, float | None]  # STAT_FIELDS, ms
    is_delegated_op: bool | None = None
    meta: Mapping[str, str | None] = field(default_factory=dict)  # META_FIELDS
    samples_ms: np.ndarray | None = None  # float64, runs concatenated in JobRecord.sample_runs order
    run_counts: np.ndarray | None = None  # int64, samples per run

    def per_run(self, labels: tuple[str, ...]) -> dict[str, np.ndarray]:
        """The raw samples split by process run label ({} when only statistics were kept)."""
        if self.samples_ms is None or self.run_counts is None:
            return {}
        import numpy as np

        bounds = np.cumsum(self.run_counts)[:-1]
        return dict(zip(labels, np.split(self.samples_ms, bounds), strict=False))
