"""A job: the engine (engine/: the job, its executor on this host, a device session per thread), the process-run
loop (loop/), a leased device (device/: locks, lease, staging), the run directory, the results model, the runner's
contract, conditions, verification.

Public API, imported lazily on first use (PEP 562) so that importing the package stays light:
    engine.job: JobResult, run_job, resume_job, run_job_on, resume_job_on
    results: Job, JobConfig, JobStatus, DeviceResult, DeviceStatus, ModelResult, ModelStatus, ProcessRun,
             JobOptions, Verification, VerificationStatus, load_manifest
    rundir: RunDirectory, LOG, MANIFEST, STATS
    device.probe: probe_all (and probe.probe, reached by its module: a name the package cannot re-export)
    loop.launch: Launch, prepare_launch (how the runner starts on a device: launcher, ABI check, cpus big/prime)
"""

from __future__ import annotations

from orchestrator.base.lazy import lazy_api

_API = {
    "JobResult": "engine.job",
    "run_job": "engine.job",
    "resume_job": "engine.job",
    "run_job_on": "engine.job",
    "resume_job_on": "engine.job",
    "Job": "orchestrator.results.model",
    "JobConfig": "orchestrator.results.model",
    "JobStatus": "orchestrator.results.model",
    "DeviceResult": "orchestrator.results.model",
    "DeviceStatus": "orchestrator.results.model",
    "ModelResult": "orchestrator.results.model",
    "ModelStatus": "orchestrator.results.model",
    "ProcessRun": "orchestrator.results.model",
    "JobOptions": "orchestrator.results.model",
    "Verification": "orchestrator.results.model",
    "VerificationStatus": "orchestrator.results.model",
    "load_manifest": "orchestrator.results.model",
    "RunDirectory": "rundir",
    "LOG": "rundir",
    "MANIFEST": "rundir",
    "STATS": "rundir",
    "probe_all": "device.probe",
    "Launch": "loop.launch",
    "prepare_launch": "loop.launch",
}
__all__ = sorted(_API)

__getattr__ = lazy_api(__name__, _API)
