"""`memory-grew` (issue 39): B's peak RSS beyond A's by more than the threshold fails `compare` (exit 1) with its own
verdict, the owner that grew named, whatever its latency did; within the threshold it holds. Synthetic run
directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.app.nightly_plan import load_plan
from orchestrator.base.codec import encode
from orchestrator.report.terminal.verdicts import verdict_table
from orchestrator.results.footprint import Footprint, ModelMemory, Owners
from orchestrator.results.record import RunRecord
from orchestrator.verdicts.compare import compare_jobs
from orchestrator.verdicts.memory import memory_verdict
from orchestrator.verdicts.statistics import Verdict, VerdictSettings
from tests.helpers.synthetic_run import make_run_dir

FAST = VerdictSettings(resamples=200)
MIB = 1 << 20


def memory(delegate_mib: int) -> ModelMemory:
    owners = Owners(program=32 * MIB, planned=8192, delegate=delegate_mib * MIB, runtime=666, other=5 * MIB)
    return ModelMemory(owners, owners.total, Footprint(owners, owners.total), ("program", "planned", "runtime"),
                       ("delegate", "other"), "e2e-1")


def run_dir(root: Path, delegate_mib: int, **kw: Any) -> Path:
    made = make_run_dir(root, devices=("pixel8",), speed=[1.0], runs=6, **kw)
    manifest = json.loads((made / "manifest.json").read_text())
    manifest["devices"]["pixel8"]["models"]["m0"]["memory"] = encode(memory(delegate_mib))
    (made / "manifest.json").write_text(json.dumps(manifest))
    return made


def test_a_peak_beyond_the_threshold_fails_the_comparison(tmp_path: Path) -> None:
    a = run_dir(tmp_path / "a", 32)
    b = run_dir(tmp_path / "b", 48, seed=1, run_id="20261122-000001-bbbb")  # 69 -> 85 MiB: +23 %
    comparison = compare_jobs(RunRecord(a), RunRecord(b), FAST, per_op=False)
    (pair,) = comparison.pairs
    assert pair.verdict is not Verdict.REGRESSED and pair.memory_grew and comparison.exit_code == 1
    assert encode(comparison)["memory_grew"] is True and encode(comparison)["pairs"][0]["memory"]["grew"] is True
    table = verdict_table(comparison)
    assert "MEMORY-GREW" in table and "most in delegate (+16.0 MiB)" in table

    held = compare_jobs(RunRecord(a), RunRecord(run_dir(tmp_path / "c", 36, seed=2, run_id="20261122-000002-cccc")), FAST, per_op=False)
    assert not held.memory_grew and held.exit_code == 0 and "memory held" in verdict_table(held)
    loose = compare_jobs(RunRecord(a), RunRecord(b), VerdictSettings(resamples=200, memory_threshold=0.3), per_op=False)
    assert not loose.memory_grew


def test_nothing_to_judge_without_memory_on_both_sides() -> None:
    assert memory_verdict(None, memory(32)) is None and memory_verdict(memory(32), None) is None
    verdict = memory_verdict(memory(32), memory(32))
    assert verdict is not None and not verdict.grew and verdict.ratio == 1.0


def test_the_plans_memory_threshold(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("devices: [local]\nmodels: [m.py:build]\nreport: r\nmemory_threshold: 25%\n")
    assert load_plan(plan).settings.memory_threshold == 0.25
    plan.write_text("devices: [local]\nmodels: [m.py:build]\nreport: r\n")
    assert load_plan(plan).settings.memory_threshold == 0.10
