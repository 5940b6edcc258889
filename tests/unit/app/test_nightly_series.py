"""A night regressed against its series though not against its last good run: the night's verdict reads
`regressed`, and says what the neighbour comparison alone said. Real SQLite store, synthetic run directories
(deterministic samples), the nightly's own comparison step (app/nightly.py `_compare`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from orchestrator.app.nightly import _compare
from orchestrator.app.nightly_plan import NightlyPlan
from orchestrator.report.terminal.verdicts import verdict_table
from orchestrator.results.model import load_manifest
from orchestrator.store import open_store
from orchestrator.verdicts.compare import Comparison
from orchestrator.verdicts.recorded import marked_regressed
from orchestrator.verdicts.statistics import Verdict
from tests.unit.store.rundirs import make_run_dir
from tests.unit.verdicts.test_noise import scaled

FACTORS = [1.0] * 6 + [1.04, 1.04]  # six nights, then a step of 4 % that passed (under the 5 % threshold)


def test_a_drift_that_passed_night_by_night_is_regressed_against_the_series(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    with open_store(db) as store:
        for k, factor in enumerate(FACTORS):
            store.record(scaled(make_run_dir(tmp_path / "runs", f"run-{k}", f"2026-01-0{k + 1}T00:00:00+0000",
                                             devices=("local",), runs=6, iterations=10), factor))
        night = scaled(make_run_dir(tmp_path / "runs", "run-b", "2026-01-20T00:00:00+0000", devices=("local",), runs=6,
                                    iterations=10), 1.09)
        store.record(night)
        plan = NightlyPlan(path=tmp_path / "plan.yaml", devices=("local",), models=(), report=tmp_path, out=tmp_path,
                           center="fast-state")  # the series logic on the statistic its synthetic nights were made for
        result = SimpleNamespace(rundir=SimpleNamespace(root=night), job=load_manifest(night))
        (pair,) = _compare(plan, store, result).pairs  # type: ignore[arg-type]
    assert pair.source_a == "run-7" and pair.estimate is not None and pair.estimate.ratio < 1.05  # 1.09 / 1.04
    assert pair.series is not None and pair.series.regressed and pair.series.reference_runs[0] == "run-0"
    assert [s.run_id for s in pair.series.steps] == ["run-6"]  # where the drift began
    assert pair.verdict is Verdict.REGRESSED and pair.regressed
    assert pair.reason is not None and pair.reason.startswith("regressed against its series; against the last good "
                                                              "run alone: ")
    assert marked_regressed(night, "local", "mlp")  # never a later baseline
    table = verdict_table(Comparison("last-good", "run-b", plan.settings, (pair,)))
    assert "REGRESSED" in table
    assert "\\x0a" not in table and "baselines: local mlp: run-7" in table.splitlines()  # a line, not a literal \x0a
