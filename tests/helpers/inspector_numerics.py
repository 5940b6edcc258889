"""ExecuTorch's Inspector as the reference for our numerical gaps (`calculate_numeric_gap`)."""

from __future__ import annotations

import math
from pathlib import Path

from orchestrator.numerics import (
    gaps_against_reference,
    load_reference,
    runtime_outputs,
)
from orchestrator.profiles.etrecord import load_etrecord

RELATIVE = 1e-6


def assert_gaps_equal_inspector(etdump: Path, debug_buffer: Path, etrecord: Path, reference: Path) -> int:
    """Our rows equal Inspector's for MSE, L1 and SNR (same ops, same order, gaps to 1e-6 relative).

    Returns the number of rows compared."""
    from executorch.devtools import Inspector

    ours = gaps_against_reference(load_reference(reference), runtime_outputs(etdump, debug_buffer, load_etrecord(etrecord)))
    inspector = Inspector(etdump_path=str(etdump), etrecord=str(etrecord), debug_buffer_path=str(debug_buffer))
    for metric in ("mse", "l1", "snr"):
        frame = inspector.calculate_numeric_gap(metric.upper())
        assert len(frame) == len(ours), f"{metric}: Inspector has {len(frame)} rows, we have {len(ours)}"
        for (_, row), mine in zip(frame.iterrows(), ours, strict=False):
            assert tuple(row["aot_debug_handle"]) == mine.aot_handle
            assert tuple(row["runtime_debug_handle"]) == mine.runtime_handle
            assert list(row["aot_ops"]) == list(mine.aot_ops)
            assert list(row["runtime_ops"]) == list(mine.runtime_ops)
            theirs = [float(g) for g in row["gap"]]
            values = [getattr(g, metric) for g in mine.gaps]
            assert len(theirs) == len(values)
            for a, b in zip(theirs, values, strict=False):
                assert (math.isnan(a) and math.isnan(b)) or a == b or math.isclose(a, b, rel_tol=RELATIVE), (metric, a, b)
    return len(ours)
