"""A night regressed against its series though not against its last good run: the night's verdict reads
`regressed`, and says what the neighbour comparison alone said. Real SQLite store, synthetic run directories
(deterministic samples), the nightly's own comparison step (app/nightly.py `_compare`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from orchestrator.app.nightly import _compare, _Histories
from orchestrator.app.nightly_plan import NightlyPlan
from orchestrator.report.terminal.verdicts import verdict_table
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.store import Store, open_store
from orchestrator.verdicts.compare import Comparison
from orchestrator.verdicts.recorded import marked_regressed
from orchestrator.verdicts.statistics import Verdict
from tests.unit.store.rundirs import make_run_dir
from tests.unit.verdicts.test_noise import scaled

FACTORS = [1.0] * 6 + [1.04, 1.04]  # six nights, then a step of 4 % that passed (under the 5 % threshold)


def _drifted_series(tmp_path: Path, store: Store) -> tuple[NightlyPlan, Path]:
    """FACTORS' nights in the store, then tonight's job at 1.09x (recorded too), and the plan that judges it: the
    series logic on the statistic its synthetic nights were made for (fast-state)."""
    for k, factor in enumerate(FACTORS):
        store.record(RunRecord(scaled(make_run_dir(tmp_path / "runs", f"run-{k}", f"2026-01-0{k + 1}T00:00:00+0000",
                                         devices=("local",), runs=6, iterations=10), factor)))
    night = scaled(make_run_dir(tmp_path / "runs", "run-b", "2026-01-20T00:00:00+0000", devices=("local",), runs=6,
                                iterations=10), 1.09)
    store.record(RunRecord(night))
    plan = NightlyPlan(path=tmp_path / "plan.yaml", devices=("local",), models=(), report=tmp_path, out=tmp_path,
                       center="fast-state")
    return plan, night


def test_a_drift_that_passed_night_by_night_is_regressed_against_the_series(tmp_path: Path) -> None:
    with open_store(tmp_path / "results.db") as store:
        plan, night = _drifted_series(tmp_path, store)
        result = SimpleNamespace(rundir=SimpleNamespace(root=night), job=load_manifest(night))
        (pair,) = _compare(plan, store, result, _Histories(store, result.job)).pairs  # type: ignore[arg-type]
    assert pair.source_a == "run-7" and pair.estimate is not None and pair.estimate.ratio < 1.05  # 1.09 / 1.04
    assert pair.series is not None and pair.series.regressed and pair.series.reference_runs[0] == "run-0"
    assert [s.run_id for s in pair.series.steps] == ["run-6"]  # where the drift began
    assert pair.verdict is Verdict.REGRESSED and pair.regressed
    assert pair.reason is not None and pair.reason.startswith("regressed against its series; against the last good "
                                                              "run alone: ")
    assert marked_regressed(RunRecord(night), "local", "mlp")  # never a later baseline
    table = verdict_table(Comparison("last-good", "run-b", plan.settings, (pair,)))
    assert "REGRESSED" in table
    assert "\\x0a" not in table and "baselines: local mlp: run-7" in table.splitlines()  # a line, not a literal \x0a


def test_the_confirmation_judges_the_series_again_on_its_own_runs(tmp_path: Path) -> None:
    """Issue 37: a night regressed only against its series is settled by its confirmation's own runs of tonight's
    program, judged against the same history. Measured again at the night's level (a real drift) it stays
    regressed; back at the series' level (the night's job was one noisy job) the night is not failed by it."""
    from dataclasses import replace

    from orchestrator.app.nightly import _series_again, _settled

    with open_store(tmp_path / "results.db") as store:
        plan, night = _drifted_series(tmp_path, store)
        result = SimpleNamespace(rundir=SimpleNamespace(root=night), job=load_manifest(night))
        histories = _Histories(store, result.job)
        (pair,) = _compare(plan, store, result, histories).pairs  # type: ignore[arg-type]
        assert pair.series is not None and pair.series.regressed
        interleaved = replace(pair, verdict=Verdict.UNCHANGED, series=None, reason=None)  # A B B A saw no step
        settled = {}
        for name, factor in (("real", 1.09), ("noise", 1.0)):
            again_dir = scaled(make_run_dir(tmp_path / "again", f"run-{name}", "2026-01-20T01:00:00+0000",
                                            devices=("local",), runs=6, iterations=10), factor)
            again = SimpleNamespace(rundir=SimpleNamespace(root=again_dir), job=load_manifest(again_dir))
            found = _series_again(plan, store, again, histories, pair, interleaved)  # type: ignore[arg-type]
            settled[name] = _settled(pair, found)
    assert settled["real"].series is not None and settled["real"].series.regressed and settled["real"].regressed
    assert settled["noise"].series is not None and not settled["noise"].series.regressed
    assert not settled["noise"].regressed and settled["noise"].verdict is Verdict.UNCHANGED
