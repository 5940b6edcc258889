"""orchestrator.profiles.trace: Chrome trace event JSON of one ETDump."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.trace import build_trace, write_trace
from tests.helpers.etdumps import Profile, Run, build_etdump, typical_runs


@pytest.fixture
def etdump(tmp_path: Path) -> Path:
    path = tmp_path / "run.etdp"
    runs = typical_runs(iterations=3, layers=2, base=5_000_000)
    runs.append(Run("Execute", [Profile("DELEGATE_CALL", instr=9, start=9_000_000, end=9_004_000),
                                Profile(dd_str="GEMM #1", instr=9, start=9_001_000, end=9_002_500)]))
    path.write_bytes(build_etdump(runs))
    return path


def slices(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def test_complete_events_in_microseconds(etdump: Path) -> None:
    trace = build_trace(etdump)
    events = slices(trace)
    assert len(events) == 2 + 3 * 5 + 2
    assert min(e["ts"] for e in events) == 0.0
    load = next(e for e in events if e["name"] == "Program::load_method")
    assert (load["ts"], load["dur"]) == (0.0, 1.0)  # 1000 ns
    kernel = next(e for e in events if e["name"] == "GEMM #1")
    call = next(e for e in events if e["name"] == "DELEGATE_CALL")
    assert kernel["dur"] == pytest.approx(1.5) and call["dur"] == pytest.approx(4.0)
    assert kernel["tid"] != call["tid"]  # delegate kernels get their own track
    assert all(e["ts"] >= 0 and e["dur"] >= 0 for e in events)
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)


def test_tracks_are_named_per_block(etdump: Path) -> None:
    trace = build_trace(etdump)
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert sorted(names.values()) == ["Default", "Execute", "Execute#2", "Execute#2 · delegate"]
    assert {e["tid"] for e in slices(trace)} <= set(names)


def test_one_block_only(etdump: Path) -> None:
    events = slices(build_trace(etdump, run_block=2))
    assert {e["args"]["run_block"] for e in events} == {2}
    assert len(events) == 5
    with pytest.raises(AnalysisError, match="--run-block 9 out of range \\(the file has 5 blocks\\)"):
        build_trace(etdump, run_block=9)


def test_write_trace_is_valid_json(etdump: Path, tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    count = write_trace(etdump, out)
    data = json.loads(out.read_text())
    assert count == len(slices(data))
    assert data["displayTimeUnit"] == "ns"
    assert {"ph", "pid", "tid", "name", "ts", "dur", "args"} <= set(slices(data)[0])
