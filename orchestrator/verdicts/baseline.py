"""Which earlier run a run is compared with: `last-good`, or a named run.

`last-good` for one (device, model) of run B is the newest stored run, older than B, that
- measured a model of the same NAME on the same device (by name, not by content hash: a
  changed model file is exactly what a nightly must catch),
- with the same settings: backend, iterations, warmup and CPU threads (the number of process
  runs may differ: the statistics account for it),
- where that device and model succeeded and its outputs were not wrong,
- and that no verdict marked as regressed. Verdicts are recorded beside the run, in
  `DIR/verdicts.json` (`record_verdicts`), by `nightly`: a night that regressed is never
  the next night's baseline, so a regression keeps failing until it is fixed or accepted
  (by naming a baseline run id).

Runs are found through the results store (orchestrator.store); a stored run whose directory is
gone is skipped (its per-run samples are needed, and its verdicts.json says whether it regressed).
The same good runs, the newest `noise.WINDOW` of them, give the automatic noise floor
(`history_noise_finder`, method in noise.py).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orchestrator.cache import write_json_atomic
from orchestrator.errors import UsageError
from orchestrator.run.results import Job, ModelStatus, VerificationStatus, load_manifest
from orchestrator.store import Store
from orchestrator.verdicts.compare import Baseline, BaselineFinder, Comparison
from orchestrator.verdicts.noise import MIN_JOBS, WINDOW, NoiseFinder, NoiseFloor, estimate_floor
from orchestrator.verdicts.statistics import run_median

VERDICTS_JSON = "verdicts.json"
LAST_GOOD = "last-good"
_SCAN_LIMIT = 200  # stored runs looked at per (device, model), newest first


def settings_key(job: Job, model: str) -> tuple[Any, ...]:
    """What must match for two runs of a model to be comparable."""
    artifacts = job.model_artifacts(model)
    backend = artifacts.backend if artifacts else job.config.backend
    opts = job.config.options
    return (backend, opts.iterations, opts.warmup, opts.cpu_threads)


def record_verdicts(run_dir: Path, comparison: Comparison) -> Path:
    """Write the comparison beside the run (DIR/verdicts.json), for `last-good` and people."""
    path = Path(run_dir) / VERDICTS_JSON
    write_json_atomic(path, comparison.to_dict())
    return path


def marked_regressed(run_dir: Path, device: str, model: str) -> bool:
    path = Path(run_dir) / VERDICTS_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(p.get("device") == device and p.get("model_b") == model and (p.get("regressed") or
                                                                         p.get("verification_failed"))
               for p in data.get("pairs", ()))


def _good(run_dir: Path, job: Job, device: str, model: str) -> bool:
    dev = job.device(device)
    result = dev.model(model) if dev else None
    if result is None or result.status is ModelStatus.FAILED or not result.traced_runs:
        return False
    if result.verification is not None and result.verification.status is VerificationStatus.FAIL:
        return False
    return not marked_regressed(run_dir, device, model)


def good_history(store: Store, job_b: Job, device: str, model: str) -> Iterator[Baseline]:
    """The stored good runs of (device, model) older than `job_b` with its settings, newest first.

    `last-good` is the first of them; the noise floor (noise.py) is estimated from the first
    `noise.WINDOW`."""
    wanted = settings_key(job_b, model)
    for run in store.runs(model=model, device=device, limit=_SCAN_LIMIT):
        if run.run_id == job_b.run_id or run.started > job_b.started or run.run_dir is None:
            continue
        if not (run.run_dir / "manifest.json").is_file():
            continue
        job = load_manifest(run.run_dir)
        if settings_key(job, model) == wanted and _good(run.run_dir, job, device, model):
            yield run.run_dir, job


def last_good_finder(store: Store, job_b: Job) -> BaselineFinder:
    """`last-good` for each (device, model) of `job_b`, looked up in `store`."""
    def find(device: str, model: str) -> Baseline | None:
        return next(good_history(store, job_b, device, model), None)

    return find


def history_noise_finder(store: Store, job_b: Job, center: str, window: int = WINDOW,
                         min_jobs: int = MIN_JOBS) -> NoiseFinder:
    """The automatic noise floor of each (device, model) of `job_b`: `noise.estimate_floor` over
    the per-job statistic (`center`) of its newest `window` good stored runs (the same runs
    `last-good` chooses from)."""
    def find(device: str, model: str) -> NoiseFloor:
        history = list(itertools.islice(good_history(store, job_b, device, model), window))
        statistics = []
        for _, job in reversed(history):  # oldest first
            result = job.device(device).model(model)  # type: ignore[union-attr]  # _good checked both
            statistics.append(run_median([r.execute_ms for r in result.traced_runs], center))  # type: ignore[union-attr]
        return estimate_floor(statistics, min_jobs=min_jobs)

    return find


def named_finder(store: Store | None, ref: str) -> BaselineFinder:
    """One baseline run for every pair: a run directory, or a stored run id."""
    path = Path(ref).expanduser()
    if not (path / "manifest.json").is_file():
        if store is None or not store.has_run(ref):
            raise UsageError(f"baseline {ref!r}: neither a run directory nor a stored run id")
        found = store.run_dir(ref)
        if found is None or not (found / "manifest.json").is_file():
            raise UsageError(f"baseline {ref!r}: its run directory is gone")
        path = found
    job = load_manifest(path)
    return lambda device, model: (path, job)
