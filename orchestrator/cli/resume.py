"""`etfarm run --resume DIR`: the recorded job's settings, checked against what the command line says.

The recorded JobConfig (devices, models, names, backend, RunOptions) is the job; an option given
explicitly with --resume that says otherwise is a usage error naming the option and both values,
because a resumed run mixing two settings would be two runs under one id.

A run made with `--scheduler` resumes on the farm: at the recorded scheduler, or at `--scheduler`
(or ETFARM_SCHEDULER) when the farm's scheduler has moved. A single-host run resumes on this host;
`--scheduler` on the command line for it is refused (its devices are this host's inventory's).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from orchestrator.errors import UsageError


def resume_run(ctx: typer.Context, root: Path, config: Path | None, *, out: Path | None, models: list[str] | None,
               names: list[str] | None, devices: str, backend: str, options: Any, progress: Any,
               scheduler: str | None, farm: Callable[[str], Any]) -> Any:
    """Check the command line against DIR's manifest, then run what DIR is missing."""
    from orchestrator.artifacts import parse_model_specs
    from orchestrator.config import load_inventory
    from orchestrator.run import MANIFEST, load_manifest, resume_job

    if not (root / MANIFEST).is_file():
        raise UsageError(f"--resume {root}: no {MANIFEST} there (not an etfarm run directory)")
    job = load_manifest(root)
    recorded = job.config
    given = {name for name, value in ctx.params.items()  # typer vendors click: compare the sources by name
             if getattr(ctx.get_parameter_source(name), "name", "") in ("COMMANDLINE", "ENVIRONMENT")
             and value is not None}
    rec_opts = recorded.options
    checks: dict[str, tuple[str, Any, Any]] = {
        "model": ("--model", list(models or ()), list(recorded.models)),
        "name": ("--name", list(names or ()), [m.name for m in job.models]),
        "devices": ("--devices", [d.strip() for d in devices.split(",") if d.strip()], list(recorded.devices)),
        "backend": ("--backend", backend, recorded.backend),
        "out": ("--out", out.resolve() if out else None, root.resolve()),
    }
    for field, flag in (("runs", "--runs"), ("iterations", "--iterations"), ("warmup", "--warmup"),
                        ("run_timeout_s", "--timeout"), ("cpu_threads", "--threads"),
                        ("untraced_runs", "--untraced-runs"), ("cooldown_s", "--cooldown"),
                        ("max_temp_c", "--max-temp"), ("order", "--order"), ("seed", "--seed"),
                        ("intermediate_outputs", "--intermediate-outputs"), ("numerics", "--numerics"),
                        ("wait_for_lock", "--no-wait"), ("lock_timeout_s", "--lock-timeout")):
        param = {"run_timeout_s": "timeout", "cpu_threads": "threads", "cooldown_s": "cooldown",
                 "max_temp_c": "max_temp", "wait_for_lock": "no_wait", "lock_timeout_s": "lock_timeout"}.get(field, field)
        checks[param] = (flag, getattr(options, field), getattr(rec_opts, field))
    for param, (flag, value, want) in checks.items():
        if param in given and value != want:
            raise UsageError(f"--resume {root}: {flag} {_show(value)} differs from the recorded {_show(want)}; "
                             "resume with the recorded settings (leave the option out) or start a new run")
    local_run_on_a_farm = recorded.scheduler is None and scheduler is not None \
        and getattr(ctx.get_parameter_source("scheduler"), "name", "") == "COMMANDLINE"  # not ETFARM_SCHEDULER
    if local_run_on_a_farm:
        raise UsageError(f"--resume {root}: this run ran on one host, not on a farm; resume it without --scheduler")
    texts = [m.spec for m in job.models] or list(recorded.models)
    specs = parse_model_specs(texts, [m.name for m in job.models] if job.models else ())
    if recorded.scheduler is not None:
        from orchestrator.scale.client import resume_distributed

        return resume_distributed(root, specs, progress=progress, scale=farm(scheduler or recorded.scheduler))
    config_file = config or (Path(recorded.config_file) if recorded.config_file else None)
    inventory = load_inventory(config_file)
    selected = inventory.select(list(recorded.devices))
    return resume_job(root, selected, specs, progress=progress)


def _show(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)
