"""ExecuTorch's Inspector as the reference for our statistics, merged across run files."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

STAT_COLUMNS = ("min_ms", "p10_ms", "p50_ms", "p90_ms", "avg_ms", "max_ms")


def inspector_merged_stats(etdumps: list[Path], etrecord: Path | None) -> dict[tuple[str, int], dict[str, Any]]:
    """Inspector's samples per (block, event index), concatenated across files, with numpy's statistics."""
    from executorch.devtools import Inspector

    raw: dict[tuple[str, int], list[float]] = defaultdict(list)
    names: dict[tuple[str, int], str] = {}
    for path in etdumps:
        inspector = Inspector(etdump_path=str(path), etrecord=str(etrecord) if etrecord else None)
        for block in inspector.event_blocks:
            for index, event in enumerate(block.events):
                if event.perf_data is not None:
                    raw[(block.name, index)].extend(event.perf_data.raw)
                    names[(block.name, index)] = event.name
    return {
        key: {"event_name": names[key], "samples": len(v), "min_ms": min(v), "max_ms": max(v), "avg_ms": float(np.mean(v)),
              "p10_ms": float(np.percentile(v, 10)), "p50_ms": float(np.percentile(v, 50)), "p90_ms": float(np.percentile(v, 90))}
        for key, v in raw.items()
    }


def assert_stats_equal_inspector(stats: Any, etdumps: list[Path], etrecord: Path | None) -> None:
    """Every row of a stats frame (one device and model) equals Inspector's merged numbers to 1e-9."""
    expected = inspector_merged_stats(etdumps, etrecord)
    ours = {(r.event_block, int(r.event_index)): r for r in stats.itertuples()}
    assert set(ours) == set(expected)
    for key, want in expected.items():
        got = ours[key]
        assert got.event_name == want["event_name"], key
        assert int(got.samples) == want["samples"], key
        for column in STAT_COLUMNS:
            assert getattr(got, column) == pytest.approx(want[column], rel=1e-9, abs=1e-12), (key, column)
