"""The nightly plan: what a night runs and how it judges it, read strictly from YAML.

The plan (YAML, `yaml.safe_load`; docs/architecture.md, "Contracts: the nightly plan"; example in configs/nightly.yaml):

    devices: [pixel8, rpi5]                 # or "pixel8,rpi5"
    models: ["models/mobilenet.py:build", {spec: "models/vit.py:build", backend: portable, name: vit-portable}]
    runs: 10                                # process runs per device and model
    iterations: 50
    warmup: 5
    threshold: 5%                           # end to end; `op_threshold` (default 10%) per op
    center: auto                            # default; mean, fast-state, fast (statistics.Center)
    noise_floor: auto                       # default; or a percentage (0% = none): see noise.py
    baseline: last-good                     # or a run id / run directory
    reference: 20261101-120000-ab12         # optional: pin the series reference to a run (a release's); default:
                                            # the level before the night's drift (series.py)
    report: reports/                        # Markdown + JSON verdicts written here
    out: reports/runs                       # optional: where run directories go (default REPORT/runs)
    config: configs/devices.yaml            # optional device inventory (default: --config, $ETFARM_CONFIG)
    scheduler: tcp://10.0.0.1:8786          # optional: run on the Dask farm (--scheduler/$ETFARM_SCHEDULER win)
    backend: xnnpack                        # optional default backend of the models
    confirm: true                           # default: a regressed or unjudged (device, model) runs again, interleaved
    confirm_max_runs: 80                    # default: the interleaved confirmation pools jobs while inconclusive, up
                                            # to this many runs a side (run --ab's --max-runs)
    threads: [1, 4]                         # optional, as run's --threads: a number or a list (a sweep)
    prompt_len: 32                          # optional, LLMs: run's --prompt-len / --gen-len
    gen_len: [32, 128]
    recipe: [fp32, int8-static]             # optional, as run's --recipe: export recipes, a list sweeps
    publish: site/                          # optional: after the night, `etfarm publish --out site/` (the dashboard)
    bisect: true                            # optional: a confirmed regression over several commits is bisected
    repo: ../src                            # optional: the repository (default: the one holding each model file)
    bisect_budget: 8                        # optional: at most this many commits measured per bisect (default 8)
    junit: reports/verdicts.xml             # optional: the verdicts as JUnit XML for CI test reporters (--junit wins)

Relative paths are taken from the current directory, as on the command line. A bad plan is a
ConfigError naming the file and the key (exit 2), before anything runs: unknown keys, bad values, an
unknown backend, a model spec that resolves to no file or module, two models of one name (nightly.py).
A model whose code or export fails is not a bad plan: it is that model's failure, the others run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.app.baseline import LAST_GOOD
from orchestrator.artifacts.lowering import BACKENDS
from orchestrator.artifacts.recipes import check_recipe_backend, parse_recipes, recipe_words
from orchestrator.base.errors import ConfigError, UsageError
from orchestrator.base.yamlfile import load_yaml, shorten
from orchestrator.farm import scheduler_problem
from orchestrator.results.limits import LIMITS, MAX_RUNS_PER_SIDE, UNTIL_CONFIDENT_MAX_RUNS
from orchestrator.results.model import JobOptions
from orchestrator.verdicts.memory import DEFAULT_MEMORY_THRESHOLD
from orchestrator.verdicts.statistics import (
    DEFAULT_CENTER,
    DEFAULT_OP_THRESHOLD,
    DEFAULT_THRESHOLD,
    Center,
    VerdictSettings,
)
from orchestrator.verdicts.trust import JOB_SHIFT_SD

_KEYS = {"devices", "models", "runs", "iterations", "warmup", "threshold", "op_threshold", "baseline", "report", "out",
         "config", "backend", "center", "noise_floor", "scheduler", "confirm", "threads", "prompt_len", "gen_len",
         "reference", "recipe", "publish", "bisect", "repo", "bisect_budget", "junit", "memory_threshold",
         "confirm_max_runs"}
DEFAULT_BISECT_BUDGET = 8
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
    reference: str | None = None  # a pinned series reference (a release's run); None: the series' own (series.py)
    config: Path | None = None
    center: str = DEFAULT_CENTER
    noise_floor: float | None = None  # None: auto (per device and model from stored history), else relative
    scheduler: str | None = None  # the Dask farm's scheduler: the devices are its workers'
    confirm: bool = True  # a regressed or unjudged (device, model) is run again interleaved; only a reproduced regression fails
    # The confirmation's jobs pool while it is inconclusive, up to this many runs a side, as run --ab's --max-runs:
    # at twice a night's runs, a device with speed states left most unchanged nights unjudged (benchmarks/README.md,
    # "A night's confirmation pools up to 80 runs a side").
    confirm_max_runs: int = UNTIL_CONFIDENT_MAX_RUNS
    # As run's --threads, --prompt-len, --gen-len: one value, or a list that sweeps (one model per value).
    threads: tuple[int, ...] = ()
    prompt_lens: tuple[int, ...] = ()
    gen_lens: tuple[int, ...] = ()
    recipes: tuple[str, ...] = ()  # as run's --recipe: export recipes (a list sweeps: a series per recipe)
    publish: Path | None = None  # the dashboard's directory, published from the store after the night
    bisect: bool = False  # after a confirmed regression over more than one commit, bisect it (app/bisect_night.py)
    repo: Path | None = None  # the repository to bisect; None: the one holding each model file
    bisect_budget: int = DEFAULT_BISECT_BUDGET  # commits measured per bisect, at most
    junit: Path | None = None  # the night's verdicts as JUnit XML (a file; --junit overrides)
    memory_threshold: float = DEFAULT_MEMORY_THRESHOLD  # `memory-grew` beyond this (verdicts/memory.py)

    @property
    def settings(self) -> VerdictSettings:
        # a night and its history are separate jobs: until the series has a measured floor, each carries the job shift
        # `compare` assumes (trust.py); an interleaved confirmation is one job and carries none
        return VerdictSettings(threshold=self.threshold, op_threshold=self.op_threshold, center=self.center,
                               noise_floor=self.noise_floor or 0.0, auto_noise_floor=self.noise_floor is None,
                               memory_threshold=self.memory_threshold, job_shift=JOB_SHIFT_SD)

    def options(self) -> JobOptions:
        return JobOptions(runs=self.runs, iterations=self.iterations, warmup=self.warmup,
                          cpu_threads=self.threads[0] if len(self.threads) == 1 else 0,
                          thread_counts=self.threads if len(self.threads) > 1 else (),
                          prompt_lens=self.prompt_lens, gen_lens=self.gen_lens, recipes=self.recipes)


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
    backend = _backend(path, "backend", data.get("backend", "xnnpack"))
    report = _folder(path, "report", data["report"])
    models = _models(path, data["models"], backend)
    recipes = _recipes(path, data.get("recipe"), models)
    return NightlyPlan(
        path=Path(path), devices=_devices(path, data["devices"]), models=models, recipes=recipes,
        report=report, out=_folder(path, "out", data["out"]) if data.get("out") else report / "runs",
        publish=_folder(path, "publish", data["publish"]) if data.get("publish") is not None else None,
        junit=_file(path, "junit", data["junit"]) if data.get("junit") is not None else None,
        runs=_count(path, data, "runs", 10), iterations=_count(path, data, "iterations", 50),
        warmup=_count(path, data, "warmup", 5),
        threshold=_percent(path, data, "threshold", DEFAULT_THRESHOLD),
        op_threshold=_percent(path, data, "op_threshold", DEFAULT_OP_THRESHOLD),
        memory_threshold=_percent(path, data, "memory_threshold", DEFAULT_MEMORY_THRESHOLD),
        baseline=_text(path, "baseline", data.get("baseline", LAST_GOOD)),
        reference=_text(path, "reference", data["reference"]) if data.get("reference") is not None else None,
        config=Path(_text(path, "config", data["config"])).expanduser() if data.get("config") else None,
        center=_center(path, data.get("center", DEFAULT_CENTER)), noise_floor=_noise_floor(path, data.get("noise_floor", "auto")),
        scheduler=_scheduler(path, data["scheduler"]) if data.get("scheduler") is not None else None,
        confirm=_flag(path, data, "confirm", True),
        confirm_max_runs=_runs_per_side(path, data.get("confirm_max_runs", UNTIL_CONFIDENT_MAX_RUNS)),
        threads=_ints(path, data, "threads", 0, LIMITS["cpu_threads"][1]),
        prompt_lens=_ints(path, data, "prompt_len", 1, _SWEEP_MOST), gen_lens=_ints(path, data, "gen_len", 1, _SWEEP_MOST),
        bisect=_flag(path, data, "bisect", False), repo=_repo(path, data.get("repo")),
        bisect_budget=_budget(path, data.get("bisect_budget", DEFAULT_BISECT_BUDGET)))


def _repo(path: Path, value: Any) -> Path | None:
    """`repo:` a directory that exists (whether it is a git repository is checked when a bisect needs it)."""
    if value is None:
        return None
    folder = Path(_text(path, "repo", value)).expanduser()
    if not folder.is_dir():
        raise ConfigError(path, "repo", f"{folder}: no such directory")
    return folder


def _runs_per_side(path: Path, value: Any) -> int:
    least, most = MAX_RUNS_PER_SIDE
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise ConfigError(path, "confirm_max_runs", f"expected a number of runs a side from {least} to {most}, got "
                                                    f"{shorten(repr(value))}")
    return value


def _budget(path: Path, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
        raise ConfigError(path, "bisect_budget", f"expected a number of commits from 1 to 1000, got {shorten(repr(value))}")
    return value


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


def _scheduler(path: Path, value: Any) -> str:
    address = _text(path, "scheduler", value)
    problem = scheduler_problem(address)
    if problem is not None:
        raise ConfigError(path, "scheduler", f"{shorten(repr(address))}: {problem}")
    return address


def _center(path: Path, value: Any) -> str:
    if value not in {c.value for c in Center}:
        raise ConfigError(path, "center", f"expected {', '.join(c.value for c in Center)}, got {value!r}")
    return str(value)


def _text(path: Path, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(path, key, f"expected a non-empty string, got {value!r}")
    return value.strip()


def _backend(path: Path, key: str, value: Any) -> str:
    backend = _text(path, key, value)
    if backend not in BACKENDS:
        raise ConfigError(path, key, f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    return backend


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
                             _backend(path, f"{where}.backend", item.get("backend", backend)),
                             _text(path, f"{where}.name", item["name"]) if item.get("name") is not None else None))
    return tuple(out)


def _recipes(path: Path, value: Any, models: tuple[PlanModel, ...]) -> tuple[str, ...]:
    """`recipe: int8-static` or `recipe: [fp32, int8-static]`: names this ExecuTorch offers, or factories; each
    model's backend must be the one the named recipes lower to."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str) and v.strip() and "," not in v for v in items):
        raise ConfigError(path, "recipe", f"expected a recipe name or a list of them, got {shorten(repr(value))}")
    try:
        recipes = parse_recipes(",".join(items), where="recipe")
    except UsageError as exc:
        raise ConfigError(path, "recipe", str(exc).removeprefix("recipe: ")) from None
    for i, model in enumerate(models):
        try:
            check_recipe_backend(model.backend, recipes, where="backend")
        except UsageError as exc:
            raise ConfigError(path, f"models[{i}].backend", str(exc).removeprefix(f"backend {model.backend}: ")) from None
    return recipe_words(recipes)


def _count(path: Path, data: dict[str, Any], key: str, default: int) -> int:
    """A count within JobOptions' bounds (results/limits.py), as the command line's."""
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


def _file(path: Path, key: str, value: Any) -> Path:
    """A file the night writes: its folder as `_folder` checks one; the file itself is not a directory."""
    target = Path(_text(path, key, value)).expanduser()
    if target.is_dir():
        raise ConfigError(path, key, f"{target} is a directory; give a file name")
    _folder(path, key, str(target.parent))
    return target


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
