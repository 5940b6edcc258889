"""results/footprint.py: the runner's memory object checked, and which run a model's memory by owner comes from."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.results.footprint import RunnerMemory, model_memory
from orchestrator.results.model import ProcessRun


def split(delegate: int, peak: int, other: int = 5 << 20) -> dict[str, int]:
    return {"program": 32 << 20, "planned": 8192, "delegate": delegate, "runtime": 666, "other": other, "rss": peak // 2,
            "peak_rss": peak}


def raw(delegate: int, peak: int, **changes: Any) -> dict[str, Any]:
    return {"counted": ["program", "planned", "runtime"], "delta": ["delegate", "other"], "source": "statm",
            "delegated": True, "load": split(delegate, peak), "end": split(delegate, peak), **changes}


def run(label: str, traced: bool, delegate: int, peak: int) -> ProcessRun:
    return ProcessRun(label, traced, (1.0,), memory=RunnerMemory.checked(raw(delegate, peak)))


def test_the_runners_object_is_checked() -> None:
    memory = RunnerMemory.checked(raw(33 << 20, 72 << 20))
    assert memory.end.owners().total == (32 << 20) + 8192 + (33 << 20) + 666 + (5 << 20)
    with pytest.raises(ValueError, match="memory.load.delegate is -2"):
        RunnerMemory.checked(raw(-2, 1))
    with pytest.raises(ValueError, match="each of program, planned, delegate, runtime, other"):
        RunnerMemory.checked(raw(1, 1, counted=["program"], delta=["delegate"]))
    with pytest.raises(ValueError, match="memory.load"):
        RunnerMemory.checked(raw(1, 1, load="x"))


def test_a_models_memory_is_its_median_untraced_run() -> None:
    runs = [run("run-1", True, 99, 999 << 20), run("e2e-1", False, 30 << 20, 70 << 20),
            run("e2e-2", False, 31 << 20, 72 << 20), run("e2e-3", False, 29 << 20, 74 << 20)]
    memory = model_memory(runs)
    assert memory is not None and memory.run == "e2e-2" and memory.by_owner.delegate == 31 << 20
    assert memory.peak_rss_bytes == 72 << 20 and memory.after_load.peak_rss_bytes == 72 << 20
    assert memory.counted == ("program", "planned", "runtime") and memory.delta == ("delegate", "other")
    assert memory.owners_over_peak == pytest.approx(memory.by_owner.total / (72 << 20))
    assert model_memory(runs[:1]).run == "run-1"  # type: ignore[union-attr]  # traced runs only: from them
    assert model_memory([ProcessRun("run-1", True, (1.0,))]) is None
