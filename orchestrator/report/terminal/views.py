"""JSON views for `--json`: what scripts read, derived from the results model (never from dict paths).

`job_view` is the document `etfarm run --json` prints: run id and directory, the job's status and
exit code, and per device its status, error (one line) and blame, with per model its status,
verification, end-to-end p50, PSS and, for an LLM, its generation figures (`llm`). `json_text`
serialises any view with NaN/inf as null, so the output is strict JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.cache import finite_json
from orchestrator.errors import one_line
from orchestrator.run.llm_figures import llm_summary
from orchestrator.run.results import DeviceResult, Job, ModelResult
from orchestrator.stats import percentile


def job_view(job: Job, run_dir: Path, exit_code: int, report: Path | None = None) -> dict[str, Any]:
    return {
        "run_id": job.run_id,
        "run_dir": str(run_dir),
        "report": str(report) if report is not None else None,
        "status": job.status.value,
        "exit_code": exit_code,
        "started": job.started,
        "finished": job.finished,
        "versions": dict(job.versions),
        "devices": [_device_view(d) for d in job.devices],
    }


def _device_view(device: DeviceResult) -> dict[str, Any]:
    return {
        "name": device.name,
        "transport": device.transport,
        "target": device.target,
        "status": device.status.value,
        "error": one_line(device.error) if device.error else None,
        "blame": device.blame.value if device.blame else None,
        "models": [_model_view(m) for m in device.models],
    }


def _model_view(model: ModelResult) -> dict[str, Any]:
    execute = model.wall_execute_ms
    verification = model.verification
    return {
        "name": model.name,
        "status": model.status.value,
        "error": one_line(model.error) if model.error else None,
        "blame": model.blame.value if model.blame else None,
        "verification": {"status": verification.status.value, "detail": verification.detail,
                         "max_abs_diff": verification.max_abs_diff} if verification else None,
        "e2e_p50_ms": percentile(execute, 50) if execute else None,
        "e2e_samples": len(execute),
        "execute_cv": model.execute_cv,
        "unstable": model.unstable,
        "pss_kb": model.pss_kb,
        **llm_summary(model.runs),  # an LLM: TTFT, prefill and decode tokens/s, memory (run/llm_figures.py)
    }


def json_text(view: Any) -> str:
    """`view` as indented strict JSON: NaN and infinities become null (cache.finite_json, as every file etfarm writes)."""
    return json.dumps(finite_json(view), indent=2, default=str)
