"""`etfarm run --resume DIR`: the recorded job's settings, checked against what the command line says.

The recorded JobConfig (devices, models, names, backend, RunOptions) is the job; an option given
explicitly with --resume that says otherwise is a usage error naming the option and both values,
because a resumed run mixing two settings would be two runs under one id.

A run made with `--scheduler` resumes on the farm: at the recorded scheduler, or at `--scheduler`
(or ETFARM_SCHEDULER) when the farm's scheduler has moved. A single-host run resumes on this host;
`--scheduler` on the command line for it is refused (its devices are this host's inventory's).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.app.checks import check_writable_dir
from orchestrator.errors import UsageError
from orchestrator.progress import Progress
from orchestrator.run.results import RunOptions

if TYPE_CHECKING:
    from orchestrator.app.run import JobRequest
    from orchestrator.run.job import JobResult

# RunOptions field -> (the option, the command line's parameter)
_OPTIONS = {"runs": ("--runs", "runs"), "iterations": ("--iterations", "iterations"), "warmup": ("--warmup", "warmup"),
            "run_timeout_s": ("--timeout", "timeout"), "cpu_threads": ("--threads", "threads"),
            "untraced_runs": ("--untraced-runs", "untraced_runs"), "cooldown_s": ("--cooldown", "cooldown"),
            "max_temp_c": ("--max-temp", "max_temp"), "order": ("--order", "order"), "seed": ("--seed", "seed"),
            "intermediate_outputs": ("--intermediate-outputs", "intermediate_outputs"),
            "numerics": ("--numerics", "numerics"), "wait_for_lock": ("--no-wait", "no_wait"),
            "lock_timeout_s": ("--lock-timeout", "lock_timeout"), "thread_counts": ("--threads", "threads"),
            "prompt_lens": ("--prompt-len", "prompt_len"), "gen_lens": ("--gen-len", "gen_len"),
            "recipes": ("--recipe", "recipe")}


def resume_recorded_job(request: JobRequest, options: RunOptions, progress: Progress) -> JobResult:
    """Check the command line against DIR's manifest, then run what DIR is missing (one resume at a time)."""
    from orchestrator.run import MANIFEST

    root = request.resume
    assert root is not None
    if not (root / MANIFEST).is_file():
        raise UsageError(f"--resume {root}: no {MANIFEST} there (not an etfarm run directory)")
    check_writable_dir(root, "--resume")  # a read-only run directory fails now, not after the export
    return _resume(root, request, options, progress)


def _resume(root: Path, request: JobRequest, options: RunOptions, progress: Progress) -> JobResult:
    from orchestrator.artifacts import parse_model_specs
    from orchestrator.run import load_manifest

    job = load_manifest(root)
    recorded = job.config
    checks: dict[str, tuple[str, Any, Any]] = {
        "model": ("--model", list(request.model or ()), list(recorded.models)),
        "name": ("--name", list(request.name or ()), list(recorded.names) or [m.name for m in job.models]),
        "devices": ("--devices", [d.strip() for d in request.devices.split(",") if d.strip()], list(recorded.devices)),
        "backend": ("--backend", str(request.backend), recorded.backend),
        "out": ("--out", request.out.resolve() if request.out else None, root.resolve()),
    }
    for field, (flag, _) in _OPTIONS.items():
        checks[field] = (flag, getattr(options, field), getattr(recorded.options, field))
    for key, (flag, value, want) in checks.items():
        param = _OPTIONS[key][1] if key in _OPTIONS else key
        if param in request.given and value != want:
            raise UsageError(f"--resume {root}: {flag} {_show(value)} differs from the recorded {_show(want)}; "
                             "resume with the recorded settings (leave the option out) or start a new run")
    if recorded.scheduler is None and request.scheduler is not None and request.scheduler_from == "COMMANDLINE":
        raise UsageError(f"--resume {root}: this run ran on one host, not on a farm; resume it without --scheduler")
    if recorded.names:  # one spec per name (a sweep made several models of each)
        specs = parse_model_specs(list(recorded.models), list(recorded.names))
    else:
        texts = [m.spec for m in job.models] or list(recorded.models)
        specs = parse_model_specs(texts, [m.name for m in job.models] if job.models else ())
    if recorded.scheduler is not None:
        from orchestrator.farm.client import resume_distributed

        return resume_distributed(root, specs, progress=progress,
                                  farm=request.farm(request.scheduler or recorded.scheduler))
    from orchestrator.config import load_inventory
    from orchestrator.run import resume_job

    config_file = request.config or (Path(recorded.config_file) if recorded.config_file else None)
    selected = load_inventory(config_file).select(list(recorded.devices))
    return resume_job(root, selected, specs, progress=progress)


def option_of(problem: ValueError) -> str:
    """A RunOptions problem (`max_temp_c: nan is outside ...`) said with the option's name (`--max-temp: ...`)."""
    from orchestrator.run.codec import FieldError

    if isinstance(problem, FieldError) and problem.path and problem.path[0] in _OPTIONS:
        return f"{_OPTIONS[problem.path[0]][0]}: {problem.problem}"
    return str(problem)


def _show(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)
