"""`etfarm run --resume DIR`: the recorded job's settings, checked against what the command line says.

The recorded JobConfig (devices, models, names, backend, JobOptions) is the job; an option given
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
from orchestrator.app.request import OPTIONS, JobRequest
from orchestrator.artifacts import parse_model_specs
from orchestrator.base.errors import UsageError
from orchestrator.base.progress import Progress
from orchestrator.config import load_inventory
from orchestrator.results.model import JobOptions
from orchestrator.results.record import RunRecord
from orchestrator.run import resume_job

if TYPE_CHECKING:
    from orchestrator.run.engine.job import JobResult

def resume_recorded_job(request: JobRequest, options: JobOptions, progress: Progress) -> JobResult:
    """Check the command line against DIR's manifest, then run what DIR is missing (one resume at a time)."""
    root = request.resume
    assert root is not None
    run = RunRecord(root)
    if not run.present:
        raise UsageError(f"--resume {root}: no manifest.json there (not an etfarm run directory)")
    check_writable_dir(root, "--resume")  # a read-only run directory fails now, not after the export
    return _resume(run, request, options, progress)


def _resume(run: RunRecord, request: JobRequest, options: JobOptions, progress: Progress) -> JobResult:
    root, job = run.root, run.job
    recorded = job.config
    checks: dict[str, tuple[str, Any, Any]] = {
        "model": ("--model", list(request.model or ()), list(recorded.models)),
        "name": ("--name", list(request.name or ()), list(recorded.names) or [m.name for m in job.models]),
        "devices": ("--devices", [d.strip() for d in request.devices.split(",") if d.strip()], list(recorded.devices)),
        "backend": ("--backend", str(request.backend), recorded.backend),
        "out": ("--out", request.out.resolve() if request.out else None, root.resolve()),
    }
    for field, (flag, _) in OPTIONS.items():
        checks[field] = (flag, getattr(options, field), getattr(recorded.options, field))
    for key, (flag, value, want) in checks.items():
        param = OPTIONS[key][1] if key in OPTIONS else key
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
        # only a farm's commands load the farm's package (a single-host run never does)
        from orchestrator.farm.client import resume_distributed

        return resume_distributed(root, specs, progress=progress,
                                  farm=request.farm(request.scheduler or recorded.scheduler))

    config_file = request.config or (Path(recorded.config_file) if recorded.config_file else None)
    selected = load_inventory(config_file).select(list(recorded.devices))
    return resume_job(root, selected, specs, progress=progress)


def _show(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)
