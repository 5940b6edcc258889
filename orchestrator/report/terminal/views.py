"""JSON views for `--json`: what scripts read, derived from the results model's one JSON form (never from dict paths).

`job_view` is the document `etfarm run --json` prints: the job as base/codec.py writes it into the
manifest (so a new field of the results model reaches `--json` by itself), with where it is (run
directory, report) and its exit code, each error in one line, each device's models as a list, and
per model its derived figures (`ModelResult.summary`: CV, stability, memory, an LLM's generation
figures under `llm`, and the end-to-end p50 over its executions) beside its fields. Left to the
manifest: the process runs and the raw sample lists. `json_text` serialises any view with NaN/inf as
null, so the output is strict JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.base.cache import finite_json
from orchestrator.base.errors import one_line
from orchestrator.base.stats import percentile
from orchestrator.results.model import DeviceResult, Job, ModelResult

# The summary's raw samples: every execution and load, which the manifest keeps and a view leaves out.
RAW_SAMPLES = frozenset({"wall_execute_ms", "untraced_execute_ms", "load_ms", "warm_load_ms"})


def job_view(job: Job, run_dir: Path, exit_code: int, report: Path | None = None) -> dict[str, Any]:
    form = job.to_dict()
    form["devices"] = [_device_view(d) for d in job.devices]
    return {"run_id": job.run_id, "run_dir": str(run_dir), "report": str(report) if report is not None else None,
            "status": job.status.value, "exit_code": exit_code, **form}


def _device_view(device: DeviceResult) -> dict[str, Any]:
    form = device.to_dict()
    form["models"] = [_model_view(m) for m in device.models]
    return {"name": device.name, "transport": device.transport, "target": device.target, **form,
            "error": one_line(device.error) if device.error else None}


def _model_view(model: ModelResult) -> dict[str, Any]:
    form = model.to_dict()
    del form["runs"]
    summary = form.pop("summary")
    wall = summary["wall_execute_ms"]  # every execution of the traced runs, as the printed summary counts them
    return {"name": model.name, **form, "error": one_line(model.error) if model.error else None,
            "e2e_p50_ms": percentile(wall, 50), "e2e_samples": len(wall),
            **{k: v for k, v in summary.items() if k not in RAW_SAMPLES}}


def json_text(view: Any) -> str:
    """`view` as indented strict JSON: NaN and infinities become null (cache.finite_json, as every file etfarm writes)."""
    return json.dumps(finite_json(view), indent=2, default=str)
