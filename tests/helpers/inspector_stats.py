"""ExecuTorch's Inspector as the reference for our statistics, merged across run files.

Every column of stats.csv is checked against Inspector per event: the statistics of its samples
(numpy's definitions, computed here independently of orchestrator.base.stats), and, when the run had
the model's ETRecord, what Inspector links each event to (op types, delegate backend, module;
a delegate's kernels, to which Inspector gives no module, get theirs from etfarm's kernel map,
checked against the model's structure in test_op_naming.py and test_kernel_map.py). A run that analysed without the ETRecord therefore fails here (the link columns are missing).

A job leaves out the samples of executions that waited for a CPU (profiles/contended.py). When an ETDump lies in a
job's run directory, the reference leaves out the same executions, found independently here: the job's manifest
says which executions of that process run were clean (`ProcessRun.clean`; when none of the model's was, all are
kept), and Inspector's samples of a forward
call's block are in call order (one per call, every execution the same number of calls).
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

STAT_COLUMNS = ("min_ms", "p10_ms", "p50_ms", "p90_ms", "avg_ms", "max_ms", "std_ms", "cv", "trimmed_mean_ms")
LINK_COLUMNS = ("op_types", "delegate_backend_name", "module_path")


def _module_path(hierarchy: dict[str, Any] | None) -> str:
    """Deepest module common to every op of an event ('' when none), from Inspector's module_hierarchy."""
    stacks = [[str(entry[0]) for entry in stack.values()] if stack else [] for stack in (hierarchy or {}).values()]
    if not stacks:
        return ""
    common = stacks[0]
    for stack in stacks[1:]:
        n = 0
        while n < min(len(common), len(stack)) and common[n] == stack[n]:
            n += 1
        common = common[:n]
    return common[-1] if common else ""


def _numpy_stats(v: list[float]) -> dict[str, float]:
    values = np.asarray(v, dtype=float)
    mean = float(np.mean(values))
    std = float(np.std(values, ddof=1)) if values.size > 1 else 0.0
    p10, p90 = float(np.percentile(values, 10)), float(np.percentile(values, 90))
    inside = values[(values >= p10) & (values <= p90)]
    return {"min_ms": float(values.min()), "max_ms": float(values.max()), "avg_ms": mean, "p10_ms": p10,
            "p50_ms": float(np.percentile(values, 50)), "p90_ms": p90, "std_ms": std,
            "cv": std / mean if mean != 0 else math.nan, "trimmed_mean_ms": float(inside.mean()) if inside.size else mean}


def inspector_merged_stats(etdumps: list[Path], etrecord: Path | None) -> dict[tuple[str, int], dict[str, Any]]:
    """Inspector's samples per (block, event index), concatenated across files, with numpy's statistics."""
    from executorch.devtools import Inspector

    raw: dict[tuple[str, int], list[float]] = defaultdict(list)
    meta: dict[tuple[str, int], dict[str, Any]] = {}
    for path in etdumps:
        inspector = Inspector(etdump_path=str(path), etrecord=str(etrecord) if etrecord else None)
        clean = clean_executions(Path(path))
        for block in inspector.event_blocks:
            calls = any(e.name == "Method::execute" for e in block.events)
            for index, event in enumerate(block.events):
                if event.perf_data is not None:
                    samples = list(event.perf_data.raw)
                    if calls and clean is not None and len(samples) % len(clean) == 0:
                        per = len(samples) // len(clean)
                        samples = [v for i, v in enumerate(samples) if clean[i // per]]
                    if samples:
                        raw[(block.name, index)].extend(samples)
                    meta[(block.name, index)] = {
                        "event_name": event.name, "op_types": ";".join(event.op_types or ()),
                        "delegate_backend_name": event.delegate_backend_name or "",
                        "module_path": _module_path(event.module_hierarchy)}
    return {key: {**meta[key], "samples": len(v), **_numpy_stats(v)} for key, v in raw.items()}


def clean_executions(etdump: Path) -> list[bool] | None:
    """Per execution of the process run that wrote `etdump` (DIR/<device>/<model>/<run>/etdump.etdp), whether it was
    clean, from the job's manifest; None outside a job's run directory or for a run that measured no contention."""
    run_dir, model_dir, device_dir = etdump.parent, etdump.parent.parent, etdump.parent.parent.parent
    if not (device_dir.parent / "manifest.json").is_file():
        return None
    from orchestrator.results.model import load_manifest

    device = load_manifest(device_dir.parent).device(device_dir.name)
    model = device.model(model_dir.name) if device is not None else None
    run = next((r for r in model.runs if r.label == run_dir.name), None) if model is not None else None
    if model is None or not any(r.clean_execute_ms for r in model.traced_runs):
        return None  # no execution of the model was clean: the job keeps them all
    return list(run.clean) if run is not None and run.contention is not None and run.contention.wait_ms else None


def measured_samples(rows: Any) -> Any:
    """Per row of a stats frame, every sample measured: those in its statistics plus the contended ones left out
    (`contended_samples`; absent or empty where the runner measured no contention). What a job recorded, whatever
    the host's load."""
    contended = rows["contended_samples"].fillna(0) if "contended_samples" in rows else 0
    return (rows["samples"] + contended).astype(int)


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _delegate_kernel(row: Any) -> bool:
    """A kernel a delegate ran (XNNPACK's own profiling events), as stats.csv marks it."""
    return str(row.is_delegated_op).lower() == "true"


def assert_stats_equal_inspector(stats: Any, etdumps: list[Path], etrecord: Path | None) -> None:
    """Every row of a stats frame (one device and model) equals Inspector's merged numbers to 1e-9,
    and with an ETRecord, links each event to the same op types, backend and module as Inspector."""
    expected = inspector_merged_stats(etdumps, etrecord)
    ours = {(r.event_block, int(r.event_index)): r for r in stats.itertuples() if int(r.samples) > 0}  # 0: all contended
    assert set(ours) == set(expected)
    if etrecord is not None:
        missing = [c for c in LINK_COLUMNS if c not in stats.columns]
        assert not missing, f"stats lack {missing}: the events were not linked to the ETRecord"
    linked = 0
    for key, want in expected.items():
        got = ours[key]
        assert got.event_name == want["event_name"], key
        assert int(got.samples) == want["samples"], key
        for column in STAT_COLUMNS:
            value, reference = getattr(got, column), want[column]
            if isinstance(reference, float) and math.isnan(reference):
                assert math.isnan(value), (key, column)
            else:
                assert value == pytest.approx(reference, rel=1e-9, abs=1e-12), (key, column)
        if etrecord is not None:
            for column in LINK_COLUMNS:
                if column == "module_path" and _delegate_kernel(got) and not want[column]:
                    continue  # Inspector names no module for a delegate's kernel; ours comes from the kernel map
                assert _text(getattr(got, column)) == want[column], (key, column)
            linked += bool(want["op_types"])
    if etrecord is not None:
        assert linked, "no event is linked to an operator: the comparison would prove nothing"
