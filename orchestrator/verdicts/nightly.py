"""`etfarm nightly --plan FILE`: run a plan, store it, compare each (device, model) with its baseline.

The plan (YAML, `yaml.safe_load`; docs/architecture.md, "Contracts: the nightly plan"; example in configs/nightly.yaml):

    devices: [pixel8, rpi5]                 # or "pixel8,rpi5"
    models: ["models/mobilenet.py:build", {spec: "models/vit.py:build", backend: portable, name: vit-portable}]
    runs: 10                                # process runs per device and model
    iterations: 50
    warmup: 5
    threshold: 5%                           # end to end; `op_threshold` (default 10%) per op
    center: mean                            # or fast: see statistics.Center
    noise_floor: auto                       # default; or a percentage (0% = none): see noise.py
    baseline: last-good                     # or a run id / run directory
    report: reports/                        # Markdown + JSON verdicts written here
    out: reports/runs                       # optional: where run directories go (default REPORT/runs)
    config: configs/devices.yaml            # optional device inventory (default: --config, $ETFARM_CONFIG)
    scheduler: tcp://10.0.0.1:8786          # optional: run on the Dask farm (--scheduler/$ETFARM_SCHEDULER win)
    backend: xnnpack                        # optional default backend of the models
    confirm: true                           # default: a regressed (device, model) runs again and must regress again
    threads: [1, 4]                         # optional, as run's --threads: a number or a list (a sweep)
    prompt_len: 32                          # optional, LLMs: run's --prompt-len / --gen-len
    gen_len: [32, 128]

Relative paths are taken from the current directory, as on the command line. A bad plan is a
ConfigError naming the file and the key (exit 2). Models with different backends run as one
job per backend. Each job is recorded in the results store; its verdicts are written beside it
(DIR/verdicts.json), which is what makes a regressed night never the next night's baseline.
The first night has no baseline: its pairs are `new`, it passes and becomes the baseline.

Exit code (`NightlyOutcome.exit_code`): 130 when Ctrl-C or SIGTERM stopped a job (what finished is
recorded as `interrupted`, which is never a baseline, and no verdict is computed from it); else 1 a
regression or wrong outputs; else 3 when some device or model could not be measured (no-data); else 0.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from orchestrator.errors import EXIT_INTERRUPTED, ConfigError, EtfarmError, UsageError
from orchestrator.progress import Progress
from orchestrator.run.job import JobResult, run_job
from orchestrator.run.limits import LIMITS
from orchestrator.run.results import RunOptions
from orchestrator.store import Store
from orchestrator.verdicts.baseline import (
    LAST_GOOD,
    history_noise_finder,
    last_good_finder,
    named_finder,
    record_verdicts,
)
from orchestrator.verdicts.compare import Comparison, compare_against
from orchestrator.verdicts.statistics import (
    DEFAULT_OP_THRESHOLD,
    DEFAULT_THRESHOLD,
    VerdictSettings,
)
from orchestrator.yamlfile import load_yaml, shorten

EXIT_NIGHTLY_UNMEASURED = 3
_KEYS = {"devices", "models", "runs", "iterations", "warmup", "threshold", "op_threshold", "baseline", "report", "out",
         "config", "backend", "center", "noise_floor", "scheduler", "confirm", "threads", "prompt_len", "gen_len"}
_SWEEP_MOST = 1 << 16  # as the command line's lists: beyond it a value is a typo
_MODEL_KEYS = {"spec", "backend", "name"}


@dataclass(frozen=True)
class PlanModel:
    spec: str
    backend: str
    name: str | None = None


@dataclass(frozen=True)
class NightlyPlan:
    path: Path
    devices: tuple[str, ...]
    models: tuple[PlanModel, ...]
    report: Path
    out: Path
    runs: int = 10
    iterations: int = 50
    warmup: int = 5
    threshold: float = DEFAULT_THRESHOLD
    op_threshold: float = DEFAULT_OP_THRESHOLD
    baseline: str = LAST_GOOD
    config: Path | None = None
    center: str = "mean"
    noise_floor: float | None = None  # None: auto (per device and model from stored history), else relative
    scheduler: str | None = None  # the Dask farm's scheduler: the devices are its workers'
    confirm: bool = True  # a regressed (device, model) is run again; only a regression that reproduces fails
    # As run's --threads, --prompt-len, --gen-len: one value, or a list that sweeps (one model per value).
    threads: tuple[int, ...] = ()
    prompt_lens: tuple[int, ...] = ()
    gen_lens: tuple[int, ...] = ()

    @property
    def settings(self) -> VerdictSettings:
        return VerdictSettings(threshold=self.threshold, op_threshold=self.op_threshold, center=self.center,
                               noise_floor=self.noise_floor or 0.0, auto_noise_floor=self.noise_floor is None)

    def options(self) -> RunOptions:
        return RunOptions(runs=self.runs, iterations=self.iterations, warmup=self.warmup,
                          cpu_threads=self.threads[0] if len(self.threads) == 1 else 0,
                          thread_counts=self.threads if len(self.threads) > 1 else (),
                          prompt_lens=self.prompt_lens, gen_lens=self.gen_lens)


def load_plan(path: Path) -> NightlyPlan:
    if not Path(path).is_file():
        raise ConfigError(path, None, "no such plan file")
    data = load_yaml(Path(path))  # strict: duplicate keys, alias bombs, non-UTF-8 are errors naming the line
    if not isinstance(data, dict):
        raise ConfigError(path, None, "a plan is a mapping with devices, models, report, ...")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ConfigError(path, unknown[0], f"unknown key; a plan has {', '.join(sorted(_KEYS))}")
    for key in ("devices", "models", "report"):
        if data.get(key) in (None, "", []):
            raise ConfigError(path, key, "required")
    backend = _text(path, "backend", data.get("backend", "xnnpack"))
    report = _folder(path, "report", data["report"])
    return NightlyPlan(
        path=Path(path), devices=_devices(path, data["devices"]), models=_models(path, data["models"], backend),
        report=report, out=_folder(path, "out", data["out"]) if data.get("out") else report / "runs",
        runs=_count(path, data, "runs", 10), iterations=_count(path, data, "iterations", 50),
        warmup=_count(path, data, "warmup", 5),
        threshold=_percent(path, data, "threshold", DEFAULT_THRESHOLD),
        op_threshold=_percent(path, data, "op_threshold", DEFAULT_OP_THRESHOLD),
        baseline=_text(path, "baseline", data.get("baseline", LAST_GOOD)),
        config=Path(_text(path, "config", data["config"])).expanduser() if data.get("config") else None,
        center=_center(path, data.get("center", "mean")), noise_floor=_noise_floor(path, data.get("noise_floor", "auto")),
        scheduler=_text(path, "scheduler", data["scheduler"]) if data.get("scheduler") is not None else None,
        confirm=_flag(path, data, "confirm", True), threads=_ints(path, data, "threads", 0, LIMITS["cpu_threads"][1]),
        prompt_lens=_ints(path, data, "prompt_len", 1, _SWEEP_MOST), gen_lens=_ints(path, data, "gen_len", 1, _SWEEP_MOST))


def _flag(path: Path, data: dict[str, Any], key: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(path, key, f"expected true or false, got {value!r}")
    return value


def _noise_floor(path: Path, value: Any) -> float | None:
    """'auto' -> None; '3%' or 3 -> 0.03; 0 or '0%' -> 0.0 (no floor)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    try:
        number = float(str(value).strip().removesuffix("%"))
    except ValueError:
        number = float("nan")
    if isinstance(value, bool) or not 0 <= number < 100:
        raise ConfigError(path, "noise_floor", f"expected auto or a percentage like 3%, got {value!r}")
    return number / 100.0


def _center(path: Path, value: Any) -> str:
    if value not in ("mean", "fast"):
        raise ConfigError(path, "center", f"expected mean or fast, got {value!r}")
    return str(value)


def _text(path: Path, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(path, key, f"expected a non-empty string, got {value!r}")
    return value.strip()


def _devices(path: Path, value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ConfigError(path, "devices", f"expected a list of device names, got {value!r}")
    return tuple(_text(path, f"devices[{i}]", v) for i, v in enumerate(items))


def _models(path: Path, value: Any, backend: str) -> tuple[PlanModel, ...]:
    if not isinstance(value, list):
        raise ConfigError(path, "models", "expected a list of model specs or {spec, backend, name} mappings")
    out = []
    for i, item in enumerate(value):
        where = f"models[{i}]"
        if isinstance(item, str):
            out.append(PlanModel(_text(path, where, item), backend))
            continue
        if not isinstance(item, dict):
            raise ConfigError(path, where, f"expected a spec or a mapping, got {item!r}")
        unknown = sorted(set(item) - _MODEL_KEYS)
        if unknown:
            raise ConfigError(path, f"{where}.{unknown[0]}", "unknown key; a model has spec, backend, name")
        if "spec" not in item:
            raise ConfigError(path, f"{where}.spec", "required")
        out.append(PlanModel(_text(path, f"{where}.spec", item["spec"]),
                             _text(path, f"{where}.backend", item.get("backend", backend)),
                             _text(path, f"{where}.name", item["name"]) if item.get("name") is not None else None))
    return tuple(out)


def _count(path: Path, data: dict[str, Any], key: str, default: int) -> int:
    """A count within RunOptions' bounds (run/limits.py), as the command line's."""
    value = data.get(key, default)
    least, most = LIMITS[key]
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise ConfigError(path, key, f"expected a whole number >= {least:g} and <= {most:g}, got {shorten(repr(value))}")
    return value


def _ints(path: Path, data: dict[str, Any], key: str, least: int, most: int) -> tuple[int, ...]:
    """An integer, or a list of distinct integers (a sweep), each in [least, most]; absent: ()."""
    value = data.get(key)
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    if not items or any(isinstance(v, bool) or not isinstance(v, int) or not least <= v <= most for v in items) \
            or len(set(items)) != len(items):
        raise ConfigError(path, key, f"expected a whole number or a list of distinct ones, each from {least} to {most}, "
                                     f"got {shorten(repr(value))}")
    return tuple(items)


def _folder(path: Path, key: str, value: Any) -> Path:
    """A directory the night writes into: absent (made later) or a directory, never a file."""
    folder = Path(_text(path, key, value)).expanduser()
    for part in (folder, *folder.parents):
        if part.exists():
            if not part.is_dir():
                raise ConfigError(path, key, f"{folder}: {part} is a file, not a directory")
            if not os.access(part, os.W_OK | os.X_OK):
                raise ConfigError(path, key, f"{folder}: cannot write in {part} (read-only or not ours)")
            break
    return folder


def _percent(path: Path, data: dict[str, Any], key: str, default: float) -> float:
    """'5%' or 5 -> 0.05."""
    value = data.get(key)
    if value is None:
        return default
    text = str(value).strip()
    try:
        number = float(text.removesuffix("%"))
    except ValueError:
        raise ConfigError(path, key, f"expected a percentage like 5%, got {value!r}") from None
    if isinstance(value, bool) or not 0 < number < 100:
        raise ConfigError(path, key, f"expected a percentage between 0 and 100, got {value!r}")
    return number / 100.0


@dataclass(frozen=True)
class NightlyOutcome:
    plan: NightlyPlan
    jobs: tuple[JobResult, ...]
    comparison: Comparison
    notes: tuple[str, ...] = field(default_factory=tuple)
    interrupted: bool = False  # Ctrl-C or SIGTERM stopped a job: no verdicts from partial data (exit 130)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.comparison.regressed or self.comparison.verification_failed:
            return 1
        return EXIT_NIGHTLY_UNMEASURED if self.comparison.no_data else 0


def run_nightly(plan: NightlyPlan, store: Store, progress: Progress, config: Path | None = None,
                farm: Any = None) -> NightlyOutcome:
    """Run every model of the plan on its devices (a job per backend), store, compare, record verdicts.
    `farm` (farm.client.FarmOptions): run the jobs on the Dask farm, the devices being its workers'.

    Confirmation (`confirm: true`, the default): a whole job can land in a slow state (every process
    of it slower; measured ~1 job in 10 on a loaded host, benchmarks/README.md), and one job cannot
    tell that from a regression. So the (device, model) pairs a night finds regressed are run again
    at once, as a job of their own, and compared again; the second comparison is the night's verdict
    for them. A false alarm then needs two outlier jobs in a row; a real regression shows twice."""
    if plan.baseline != LAST_GOOD:
        named_finder(store, plan.baseline)  # a baseline that names nothing is refused before any job runs
    run = _farm_runner(plan, farm, progress) if farm is not None else _host_runner(plan, config, progress)
    jobs: list[JobResult] = []
    for backend, specs in _plan_specs(plan).items():
        plan.out.mkdir(parents=True, exist_ok=True)
        jobs.append(run(specs, backend, _new_dir(plan.out), list(plan.devices)))
        _record(store, jobs[-1])
        if jobs[-1].interrupted:
            return _interrupted(plan, jobs)
    pairs = []
    notes = []
    confirmations: list[JobResult] = []
    for result in jobs:
        part = _compare(plan, store, result)
        notes.append(f"run {result.job.run_id}: {result.rundir.root}")
        regressed = [p for p in part.pairs if p.regressed]
        if regressed and plan.confirm:
            again = _confirm(plan, store, run, result, regressed, progress)
            confirmations.append(again)
            if again.interrupted:
                return _interrupted(plan, (*jobs, *confirmations))
            second = {(p.device, p.model): p for p in _compare(plan, store, again).pairs}
            for pair in regressed:
                confirmed = second.get((pair.device, pair.model))
                notes.append(f"{pair.device} {pair.model}: regressed in run {result.job.run_id}; "
                             + ("confirmed" if confirmed is None or confirmed.regressed else
                                f"NOT confirmed ({confirmed.verdict})") + f" by run {again.job.run_id}")
            part = replace(part, pairs=tuple(second.get((p.device, p.model), p) if p.regressed else p for p in part.pairs))
        pairs += part.pairs
    ids = "+".join(j.job.run_id for j in (*jobs, *confirmations))
    return NightlyOutcome(plan, (*jobs, *confirmations), Comparison(plan.baseline, ids, plan.settings, tuple(pairs)),
                          tuple(notes))


def _plan_specs(plan: NightlyPlan) -> dict[str, list[Any]]:
    """The plan's model specs per backend (a job each), resolved and named before anything runs, by
    `run`'s rule: the same model listed twice, or two models of one name, is a usage error."""
    from orchestrator.artifacts.modelspec import parse_model_specs

    jobs = {}
    for backend in dict.fromkeys(m.backend for m in plan.models):
        models = [m for m in plan.models if m.backend == backend]
        try:
            jobs[backend] = parse_model_specs([m.spec for m in models], [m.name for m in models],
                                              hint="list each model once, or give each its own name")
        except UsageError as exc:
            raise ConfigError(plan.path, "models", str(exc)) from None
    return jobs


def _interrupted(plan: NightlyPlan, jobs: Sequence[JobResult]) -> NightlyOutcome:
    """Ctrl-C or SIGTERM stopped a job: what finished is recorded (marked interrupted, never a baseline),
    no verdict is computed from the partial data."""
    ids = "+".join(j.job.run_id for j in jobs)
    notes = tuple(f"run {j.job.run_id}: {j.rundir.root}" + (" (interrupted)" if j.interrupted else "") for j in jobs)
    return NightlyOutcome(plan, tuple(jobs), Comparison(plan.baseline, ids, plan.settings, ()), notes, interrupted=True)


def _compare(plan: NightlyPlan, store: Store, result: JobResult) -> Comparison:
    """A night's job against its baselines; its verdicts are recorded beside it (a regressed job is never
    a later baseline, confirmed or not: an outlier job is no baseline either)."""
    finder = last_good_finder(store, result.job) if plan.baseline == LAST_GOOD else named_finder(store, plan.baseline)
    noise = history_noise_finder(store, result.job, plan.center) if plan.noise_floor is None else None
    part = compare_against(result.rundir.root, finder, plan.settings, a_label=plan.baseline, noise=noise)
    record_verdicts(result.rundir.root, part)
    return part


def _confirm(plan: NightlyPlan, store: Store, run: JobRunner, result: JobResult, regressed: Sequence[Any],
             progress: Progress) -> JobResult:
    """The regressed pairs' models on their devices, once more, as a job of its own (recorded in the store)."""
    from orchestrator.artifacts.modelspec import parse_model_spec

    models = {p.model for p in regressed}
    devices = list(dict.fromkeys(p.device for p in regressed))
    specs = [parse_model_spec(m.spec, m.name) for m in result.job.models if m.name in models]
    progress(f"regression in run {result.job.run_id} ({', '.join(sorted(f'{p.device} {p.model}' for p in regressed))}): "
             "running it again to confirm (a whole job in a slow state is not a regression)")
    again = run(specs, result.job.config.backend, _new_dir(plan.out), devices)
    _record(store, again)
    return again


def _record(store: Store, result: JobResult) -> None:
    """The job into the store from memory: its statistics and samples, no ETDump read again."""
    from orchestrator.store.ingest import job_record

    store.record_run(job_record(result.recorded, result.rundir.root, result.stats))


JobRunner = Callable[[list[Any], str, Path, list[str]], JobResult]  # (specs, backend, out, devices) -> the job


def _host_runner(plan: NightlyPlan, config: Path | None, progress: Progress) -> JobRunner:
    from orchestrator.config import load_inventory

    inventory = load_inventory(plan.config or config)
    inventory.select(list(plan.devices))  # every device of the plan is known before anything runs
    return lambda specs, backend, out, devices: run_job(inventory.select(devices), specs, backend=backend,
                                                        options=plan.options(), out=out, progress=progress,
                                                        config_file=inventory.path)


def _farm_runner(plan: NightlyPlan, farm: Any, progress: Progress) -> JobRunner:
    from orchestrator.farm.client import run_distributed

    return lambda specs, backend, out, devices: run_distributed(devices, specs, backend=backend, options=plan.options(),
                                                                out=out, progress=progress, farm=farm)


def _new_dir(root: Path) -> Path:
    from orchestrator.run.rundir import new_run_id

    for _ in range(10):
        candidate = root / new_run_id()
        if not candidate.exists():
            return candidate
    raise EtfarmError(f"{root}: cannot find a free run directory name")


def pair_baselines(comparison: Comparison) -> Sequence[str]:
    """One line per pair: which baseline run it was compared with (for reports)."""
    return [f"{p.device} {p.model}: baseline {p.source_a or '-'} -> {p.source_b}" for p in comparison.pairs]
