"""`etfarm run --scheduler`: the job engine (run/engine/job.py) with the farm's executor.

`run_distributed` and `resume_distributed` are the job engine's `run_job_on`/`resume_job_on` with a
`FarmExecutor` (executor.py): the job is assembled, planned and judged as on one host, its devices
run as Dask tasks. What talks to Dask is dask.py (`FarmOptions` and `connect` are used from here by
the CLI). See docs/architecture.md, "Many hosts (Dask)".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orchestrator.artifacts.modelspec import ModelSpec
from orchestrator.base.progress import Progress
from orchestrator.farm.dask import FarmOptions, connect
from orchestrator.farm.executor import FarmExecutor
from orchestrator.results.model import JobOptions
from orchestrator.run.engine.job import JobResult, resume_job_on, run_job_on

__all__ = ["FarmOptions", "connect", "resume_distributed", "run_distributed"]


def run_distributed(device_names: Sequence[str], specs: Sequence[ModelSpec], *, backend: str, options: JobOptions,
                    out: Path | None, progress: Progress, farm: FarmOptions, run_id: str | None = None) -> JobResult:
    return run_job_on(FarmExecutor(farm), device_names, specs, backend=backend, options=options, out=out,
                      progress=progress, run_id=run_id)


def resume_distributed(root: Path, specs: Sequence[ModelSpec], *, progress: Progress, farm: FarmOptions) -> JobResult:
    """Run what a recorded distributed job is missing, on the farm, into its own run directory: devices
    with every model complete are kept; a model with some process runs is sent with them (`done`, and
    their files as blobs) so its worker runs only the missing ones; the rest run whole."""
    return resume_job_on(FarmExecutor(farm), root, specs, progress=progress)
