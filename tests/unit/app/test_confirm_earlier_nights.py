"""A night's confirmation its own jobs left inconclusive pools earlier nights' interleaved jobs of the same two
programs (app/confirm_ab.py `earlier_interleaved`, app/nightly.py `_with_earlier_nights`): which stored jobs qualify,
and what pooling them does to a step near the threshold. Real SQLite store, synthetic run directories with seeded
samples; the comparison is the nightly's own (app/ab.py `ab_comparison`)."""

from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path
from types import SimpleNamespace

from orchestrator.app.ab import ab_comparison
from orchestrator.app.confirm_ab import earlier_interleaved
from orchestrator.app.nightly import _with_earlier_nights
from orchestrator.app.nightly_plan import NightlyPlan
from orchestrator.base.cache import write_json_atomic
from orchestrator.results.model import JobStatus, ProcessRun, load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.store import Store, open_store
from orchestrator.verdicts.statistics import Verdict
from tests.unit.store.rundirs import make_run_dir

MODELS = ("mlp-baseline", "mlp")  # a confirmation job: the baseline's program beside tonight's
RUNS = 8
STEP = 1.05  # tonight's program against the baseline's: near a 3 % threshold
SPREAD = 0.03  # run to run (log scale): a busy night


def confirmation(root: Path, run_id: str, day: int, *, seed: int, b_key: str = "key-mlp",
                 status: JobStatus = JobStatus.OK) -> Path:
    """A stored-shaped interleaved confirmation job: A (`mlp-baseline`) at 1.0, B (`mlp`, export key `b_key`) at
    STEP, each process run's executions around its own seeded level."""
    out = make_run_dir(root, run_id, f"2026-01-{day:02d}T00:00:00+0000", devices=("local",), models=MODELS,
                       runs=RUNS, iterations=10)
    job = load_manifest(out)
    rng = random.Random(seed)

    def resampled(model: str, run: ProcessRun) -> ProcessRun:
        if not run.traced:
            return run
        level = 10.0 * (STEP if model == "mlp" else 1.0) * math.exp(rng.gauss(0.0, SPREAD))
        return dataclasses.replace(run, execute_ms=tuple(level * (1 + 0.001 * i) for i in range(len(run.execute_ms))))

    devices = tuple(dataclasses.replace(d, models=tuple(dataclasses.replace(m, runs=tuple(
        resampled(m.name, r) for r in m.runs)) for m in d.models)) for d in job.devices)
    models = tuple(dataclasses.replace(m, key=b_key) if m.name == "mlp" else m for m in job.models)
    write_json_atomic(out / "manifest.json",
                      dataclasses.replace(job, devices=devices, models=models, status=status).to_dict())
    return out


def stored(store: Store, run_dir: Path) -> RunRecord:
    store.record(RunRecord(run_dir))
    return RunRecord(run_dir)


def test_only_earlier_whole_jobs_of_the_same_two_programs_on_the_device_newest_first(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    with open_store(tmp_path / "results.db") as store:
        older = stored(store, confirmation(runs, "conf-1", 1, seed=1))
        stored(store, confirmation(runs, "other-program", 2, seed=2, b_key="key-mlp-edited"))
        stored(store, make_run_dir(runs, "night-2", "2026-01-02T00:00:00+0000", devices=("local",), runs=RUNS,
                                   iterations=10))  # a night's own job: no baseline's program beside it
        stored(store, confirmation(runs, "stopped", 3, seed=3, status=JobStatus.INTERRUPTED))
        newer = stored(store, confirmation(runs, "conf-4", 4, seed=4))
        tonight = stored(store, confirmation(runs, "tonight", 5, seed=5))
        stored(store, confirmation(runs, "later", 6, seed=6))  # after tonight: not earlier
        found = [r.job.run_id for r in earlier_interleaved(store, tonight.job, "local", "mlp")]
        newest = [r.job.run_id for r in earlier_interleaved(store, tonight.job, "local", "mlp", limit=1)]
        elsewhere = earlier_interleaved(store, tonight.job, "rpi5", "mlp")
        plain = earlier_interleaved(store, RunRecord(runs / "night-2").job, "local", "mlp")
    assert found == [newer.job.run_id, older.job.run_id] and newest == ["conf-4"]
    assert elsewhere == [] and plain == []  # another device; a job that is no confirmation pools nothing


def test_a_step_near_the_threshold_one_job_cannot_call_is_called_with_earlier_nights(tmp_path: Path) -> None:
    """Live, a +4.6 % step read 1.033x [1.029, 1.040] one night and 1.040x [1.028, 1.054] two nights later, each
    astride the 3 % threshold: `inconclusive` every night. The same two programs A B B A on earlier nights are more
    rounds of the same comparison."""
    runs = tmp_path / "runs"
    plan = NightlyPlan(path=tmp_path / "plan.yaml", devices=("local",), models=(), report=tmp_path, out=tmp_path,
                       threshold=0.03)
    notes: list[str] = []
    with open_store(tmp_path / "results.db") as store:
        for day in range(1, 5):
            stored(store, confirmation(runs, f"conf-{day}", day, seed=100 * day + 6))
        tonight = stored(store, confirmation(runs, "tonight", 9, seed=6))
        jobs = [SimpleNamespace(rundir=SimpleNamespace(root=tonight.root), job=tonight.job, interrupted=False)]
        alone = ab_comparison(jobs, ["local"], "mlp-baseline", "mlp", plan.settings)  # type: ignore[arg-type]
        pooled, ids = _with_earlier_nights(plan, store, jobs, alone, "mlp-baseline", "mlp",  # type: ignore[arg-type]
                                           notes.append)
        decided, none = _with_earlier_nights(plan, store, jobs, pooled, "mlp-baseline", "mlp",  # type: ignore[arg-type]
                                             notes.append)
    (own,), (both,) = alone.pairs, pooled.pairs
    assert own.verdict is Verdict.INCONCLUSIVE and own.estimate is not None
    assert both.verdict is Verdict.REGRESSED and both.estimate is not None
    assert both.estimate.ci_high - both.estimate.ci_low < (own.estimate.ci_high - own.estimate.ci_low) / 1.5
    assert ids == ["conf-4", "conf-3", "conf-2", "conf-1"] and "conf-1" in pooled.b
    assert notes == ["mlp still inconclusive on local: pooled with earlier nights' interleaved job(s) of the same two "
                     "programs (conf-4, conf-3, conf-2, conf-1)"]
    assert decided is pooled and none == []  # a pair already judged pools nothing more
