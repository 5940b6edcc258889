"""A synthetic results store of many nights, recorded through the real store (`Store.record_job`), with the files
a night leaves beside its runs (verdicts.json, night.json): for the dashboard's unit tests and its benchmark
(benchmarks/bench_publish.py).

Each night is one job per backend (as `etfarm nightly` runs them) over every device and model; a (device, model,
backend) is a series. `steps` makes a series slower from a night on: {(device, model, backend): (night, factor)};
a night from which a series is slower gets `regressed` for it, and, with `confirm`, a confirmation job that
regressed again.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from device_agents.facts import DeviceFacts
from orchestrator.results.model import (
    BASELINE_SUFFIX,
    DeviceResult,
    DeviceStatus,
    Job,
    JobConfig,
    JobOptions,
    JobStatus,
    ModelArtifacts,
    ModelResult,
    ModelStatus,
    ProcessRun,
)
from orchestrator.results.night_marks import record_night
from orchestrator.results.verdicts_file import VERDICTS_JSON
from orchestrator.store import Store
from orchestrator.store.ingest import JobRecord
from orchestrator.store.rows import EventRow

SeriesId = tuple[str, str, str]  # (device, model, backend)


@dataclass(frozen=True)
class Nights:
    """What to record: nights x devices x models x backends."""

    nights: int
    devices: tuple[str, ...] = ("pixel8",)
    models: tuple[str, ...] = ("mlp",)
    backends: tuple[str, ...] = ("xnnpack",)
    steps: Mapping[SeriesId, tuple[int, float]] = field(default_factory=dict)
    runs: int = 3
    iterations: int = 10
    layers: int = 8
    confirm: bool = True
    pooled: int = 0  # confirmation jobs pooled after the first, as a night's interleaved ones: `<model>-baseline` beside
    pages: bool = True  # write a night.json beside each run (a night page's path in it)
    seed: int = 0
    # the events of night n as (event name, module path, p50 ms), delegated kernels mapped to their module (as
    # XNNPACK's, numbered `#k` in the program's order); None: `layers` operators named layer0, layer1, ...
    kernels: Callable[[int], Sequence[tuple[str, str, float]]] | None = None


def record_nights(store: Store, root: Path, plan: Nights, first: int = 0) -> list[str]:
    """Record nights `first`..`first + plan.nights - 1` of the plan; returns the run ids recorded, oldest first."""
    rng = random.Random(plan.seed * 7919 + first)
    recorded = []
    for night in range(first, first + plan.nights):
        started = f"2026-{1 + night // (28 * 24) % 12:02d}-{1 + night // 24 % 28:02d}T{night % 24:02d}:00:00+0000"
        night_id = f"n{night:05d}-{plan.backends[0]}"
        runs, confirmations = [], []
        for backend in plan.backends:
            run_id = f"n{night:05d}-{backend}"
            regressed = {s for s, (at, _) in plan.steps.items() if at == night and s[2] == backend}
            runs.append(_record(store, root, plan, run_id, started, night, backend, rng, regressed))
            if regressed and plan.confirm:
                again = f"{run_id}-confirm"
                runs.append(_record(store, root, plan, again, started.replace(":00:00", ":30:00"), night, backend, rng,
                                    regressed))
                confirmations += [{"device": d, "model": m, "first_run": run_id, "confirm_run": again,
                                   "confirmed": True, "verdict": "regressed"} for d, m, _ in sorted(regressed)]
                runs += [_record(store, root, plan, f"{again}-more{k}", started.replace(":00:00", f":3{k}:00"), night,
                                 backend, rng, regressed, baselines=True) for k in range(1, plan.pooled + 1)]
        recorded += [r.name for r in runs]
        if plan.pages:
            counts = {"regressed": sum(1 for c in confirmations)} if confirmations else {}
            page = root / f"nightly-{night_id}.html"
            page.write_text(f"<!doctype html><title>night {night_id}</title><h1>night {night_id}</h1>")  # as nightly
            record_night(runs, night_id, page, counts, confirmations)
    return recorded


def _record(store: Store, root: Path, plan: Nights, run_id: str, started: str, night: int, backend: str,
            rng: random.Random, regressed: set[SeriesId], baselines: bool = False) -> Path:
    """One stored run of every (device, model); `baselines`: an interleaved confirmation job, each model's baseline
    program run beside it as `<model>-baseline` (at the level before the night's steps)."""
    models = [*plan.models, *(f"{m}{BASELINE_SUFFIX}" for m in plan.models if baselines)]
    run_dir = root / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    devices, events, sample_runs = [], [], {}
    for d, device in enumerate(plan.devices):
        results = []
        for m, model in enumerate(models):
            step = 1.0 if model.endswith(BASELINE_SUFFIX) else _factor(plan, (device, model, backend), night)
            level = (1.0 + d + 0.5 * (m % len(plan.models))) * (3.0 if backend == "portable" else 1.0) * step
            runs = tuple(ProcessRun(f"run-{k}", True, tuple(level * (1 + 0.02 * rng.random()) for _ in range(plan.iterations)),
                                    load_ms=5.0 + m, peak_rss_kb=20_000 + 100 * m, pss_kb=15_000 + 100 * m)
                         for k in range(1, plan.runs + 1))
            results.append(ModelResult(model, ModelStatus.OK, runs))
            sample_runs[(device, model)] = ()
            if plan.kernels is not None:
                events += [EventRow(device, model, "Execute", k, name, plan.iterations * plan.runs, {"p50_ms": ms}, True,
                                    {"module_path": module, "kernel_mapping": "mapped" if module else "unmapped"})
                           for k, (name, module, ms) in enumerate(plan.kernels(night))]
                continue
            events += [EventRow(device, model, "Execute", k, f"layer{k}", plan.iterations * plan.runs,
                                {"p50_ms": level * (k + 1) / (plan.layers * (plan.layers + 1) / 2)})
                       for k in range(plan.layers)]
        devices.append(DeviceResult(device, "local", "host", DeviceStatus.OK, facts=DeviceFacts(abi="x86_64", cores=2),
                                    models=tuple(results)))
    job = Job(run_id=run_id, status=JobStatus.OK, started=started, finished=started,
              config=JobConfig(devices=plan.devices, models=tuple(f"{m}.py:build" for m in models), backend=backend,
                               options=JobOptions(runs=plan.runs, iterations=plan.iterations)),
              models=tuple(ModelArtifacts(m, f"{m}.py:build", backend, f"key-{m}", f"/x/{m}.pte", content_hash=f"hash-{m}",
                                          git_commit=f"{night:04d}{'0' * 36}") for m in models),
              devices=tuple(devices))
    store.record_job(JobRecord(job, run_dir, tuple(events), sample_runs))
    _verdicts(run_dir, plan, backend, night, regressed)
    return run_dir


def _factor(plan: Nights, series: SeriesId, night: int) -> float:
    at, factor = plan.steps.get(series, (None, 1.0))
    return factor if at is not None and night >= at else 1.0


def _verdicts(run_dir: Path, plan: Nights, backend: str, night: int, regressed: set[SeriesId]) -> None:
    import json

    pairs = [{"device": d, "model_b": m, "verdict": "regressed" if (d, m, backend) in regressed else
              ("new" if night == 0 else "unchanged"), "regressed": (d, m, backend) in regressed,
              "estimate": {"ratio": plan.steps[(d, m, backend)][1]} if (d, m, backend) in regressed else None}
             for d in plan.devices for m in plan.models]
    (run_dir / VERDICTS_JSON).write_text(json.dumps({"pairs": pairs}))


def series_ids(plan: Nights) -> Sequence[SeriesId]:
    return [(d, m, b) for d in plan.devices for m in plan.models for b in plan.backends]
