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
from orchestrator.verdicts.compare import Comparison, PairVerdict
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


def test_a_pair_whose_series_regressed_is_confirmed_against_the_program_from_before_the_step(tmp_path: Path) -> None:
    """Issue 37: a series spans separate jobs, and a device's level can move between them; only tonight's program
    interleaved with the program from before the series' step tells the model's step from the device's. A pair whose
    series did not regress is confirmed against the plan's baseline; a reference whose directory is gone falls back
    to it."""
    import shutil
    from dataclasses import replace

    from orchestrator.app.confirm_ab import confirmation_finder, series_references

    with open_store(tmp_path / "results.db") as store:
        plan, night = _drifted_series(tmp_path, store)
        result = SimpleNamespace(rundir=SimpleNamespace(root=night), job=load_manifest(night))
        (pair,) = _compare(plan, store, result, _Histories(store, result.job)).pairs  # type: ignore[arg-type]
        assert pair.series is not None and pair.series.reference_runs[-1] == "run-5"  # the newest job before run-6
        def found(pair: PairVerdict) -> RunRecord | None:
            return confirmation_finder(plan.baseline, store, result.job, series_references([pair]))("local", "mlp")

        before_step = found(pair)
        plain = found(replace(pair, series=None))
        shutil.rmtree(tmp_path / "runs" / "run-5")
        gone = found(pair)
    assert before_step is not None and before_step.job.run_id == "run-5"
    assert plain is not None and plain.job.run_id == "run-7"  # last good
    assert gone is not None and gone.job.run_id == "run-7"


def test_the_interleaved_verdict_stands_and_the_series_is_judged_again_for_the_page(tmp_path: Path) -> None:
    """Issue 37: the confirmation's own runs of tonight's program are judged against the same history for the page,
    but the night's verdict is the interleaved one: live, a quiet VM's nights moved 1.3x after the first two, and an
    unchanged model's series said regressed on the confirmation's runs too (a separate job, at the device's new
    level); the program from before the step, interleaved, said unchanged."""
    from dataclasses import replace

    from orchestrator.app.nightly import _series_again, _settled

    with open_store(tmp_path / "results.db") as store:
        plan, night = _drifted_series(tmp_path, store)
        result = SimpleNamespace(rundir=SimpleNamespace(root=night), job=load_manifest(night))
        histories = _Histories(store, result.job)
        (pair,) = _compare(plan, store, result, histories).pairs  # type: ignore[arg-type]
        assert pair.series is not None and pair.series.regressed
        again_dir = scaled(make_run_dir(tmp_path / "again", "run-again", "2026-01-20T01:00:00+0000",
                                        devices=("local",), runs=6, iterations=10), 1.09)
        again = SimpleNamespace(rundir=SimpleNamespace(root=again_dir), job=load_manifest(again_dir))
        settled = {}
        for verdict in (Verdict.UNCHANGED, Verdict.REGRESSED):  # what A B B A against the program before the step saw
            interleaved = replace(pair, verdict=verdict, series=None, reason=None)
            found = _series_again(plan, store, again, histories, pair, interleaved)  # type: ignore[arg-type]
            settled[verdict] = _settled(pair, found)
    for verdict, got in settled.items():
        assert got.verdict is verdict and got.regressed is (verdict is Verdict.REGRESSED)
        assert got.series is not None and got.series.measured_regressed  # the page still shows what it measured
    kept, overruled = settled[Verdict.REGRESSED].series, settled[Verdict.UNCHANGED].series
    assert kept is not None and not kept.overruled and kept.verdict is Verdict.REGRESSED
    # overruled, the series cannot judge: the night exits 3 (never green over it), and says why
    assert overruled is not None and overruled.verdict is Verdict.INCONCLUSIVE and settled[Verdict.UNCHANGED].unjudged
    assert overruled.describe().startswith("inconclusive (measured regressed; the device's level, not the model's: "
                                           "tonight's program A B B A with the program from before the step said "
                                           "unchanged ")
