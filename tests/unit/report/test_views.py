"""report/terminal/views.py: the `run --json` document, derived from the results model's one JSON form (base/codec.py)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from device_agents.facts import DeviceFacts
from orchestrator.base.errors import Blame, one_line
from orchestrator.report.terminal.views import job_view, json_text
from orchestrator.results.model import (
    DeviceResult,
    DeviceStatus,
    Job,
    JobConfig,
    JobStatus,
    ModelResult,
    ModelStatus,
    ProcessRun,
    Verification,
    VerificationStatus,
)


def test_job_view_names_every_device_and_model() -> None:
    ok_model = ModelResult("m", ModelStatus.OK, (ProcessRun("run-1", True, (1.0, 2.0, 3.0)), ProcessRun("e2e-1", False, (0.5,))),
                           Verification(VerificationStatus.PASS, "1 run(s) match", 1e-7, 1))
    job = Job("20260101-000000-abcd", JobStatus.PARTIAL, "t0", JobConfig(("a", "b"), ("m.py:build",), "xnnpack"), finished="t1",
              devices=(DeviceResult("a", "local", "host", DeviceStatus.OK, models=(ok_model,)),
                       DeviceResult("b", "ssh", "linux-aarch64", DeviceStatus.FAILED, error="command exited 1: x\ntail line",
                                    blame=Blame.INFRASTRUCTURE)))
    view = json.loads(json_text(job_view(job, Path("/runs/x"), 1)))
    assert (view["run_id"], view["run_dir"], view["status"], view["exit_code"]) == ("20260101-000000-abcd", "/runs/x", "partial", 1)
    a, b = view["devices"]
    assert (a["name"], a["status"], a["error"], a["blame"]) == ("a", "ok", None, None)
    (model,) = a["models"]
    assert model["name"] == "m" and model["status"] == "ok" and model["verification"]["status"] == "pass"
    assert model["e2e_p50_ms"] == 2.0 and model["e2e_samples"] == 3  # traced runs only, as the printed summary
    assert (b["status"], b["blame"], b["error"]) == ("failed", "infrastructure", "command exited 1: x | tail line")
    assert b["models"] == []


@dataclass(frozen=True)
class MeasuredModel(ModelResult):
    """A results model with a field `--json` has never heard of."""

    energy_mj: float | None = None


def test_a_new_field_of_the_results_model_reaches_the_view_by_itself() -> None:
    model = MeasuredModel("m", ModelStatus.OK, (ProcessRun("run-1", True, (1.0, 3.0)),), energy_mj=12.5)
    job = Job("r", JobStatus.OK, "t0", JobConfig(("a",), ("m.py:build",), "xnnpack"),
              devices=(DeviceResult("a", "local", "host", DeviceStatus.OK, facts=DeviceFacts.from_json({"abi": "x86_64"}), models=(model,)),))
    view = json.loads(json_text(job_view(job, Path("/runs/r"), 0)))
    (device,) = view["devices"]
    (shown,) = device["models"]
    assert shown["energy_mj"] == 12.5 and device["facts"] == {"abi": "x86_64"}  # as the manifest holds them
    assert shown["e2e_p50_ms"] == 2.0 and shown["runs"] == 1  # the derived figures, beside the fields
    assert "wall_execute_ms" not in shown and "execute_ms" not in json.dumps(view)  # raw samples stay in the manifest


def test_json_text_is_strict_json() -> None:
    assert json.loads(json_text({"cv": math.nan, "xs": [math.inf, 1.0]})) == {"cv": None, "xs": [None, 1.0]}


def test_one_line_folds_and_drops_blank_lines() -> None:
    assert one_line("a\n\n  b  \nc\n") == "a | b | c"
    assert one_line("single") == "single"
