"""`etfarm run --numerics` and `etfarm numerics`: real export, real runner, checked against Inspector."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from device_agents import DeviceSpec
from orchestrator.numerics import Metric, analyze_run
from orchestrator.profiles.debug_buffer import intermediate_bytes_per_execution
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from tests.helpers.exports import export_ahead
from tests.helpers.inspector_numerics import assert_gaps_equal_inspector
from tests.helpers.inventory import write_inventory

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "configs" / "models"
MLP = f"{MODELS / 'tiny_mlp.py'}:build"
CNN = f"{MODELS / 'tiny_cnn.py'}:build"
INT8 = f"{Path(__file__).resolve().parent / 'models' / 'tiny_mlp_int8.py'}:build"  # int8 tensors in the buffer


def etfarm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, timeout=1200,
                          check=False)


def _runs(out: Path, device: str, model: str) -> list[Path]:
    return sorted((out / device / model).glob("run-*"))


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "backend", "model"), [(MLP, "portable", "tiny_mlp"), (CNN, "xnnpack", "tiny_cnn"),
                                                        (MLP, "xnnpack", "tiny_mlp"), (CNN, "portable", "tiny_cnn"),
                                                        (INT8, "portable", "tiny_mlp_int8")])
def test_gaps_equal_inspector(spec: str, backend: str, model: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    export_ahead(spec, backend=backend)
    result = etfarm("run", "--model", spec, "--backend", backend, "--runs", "2", "--iterations", "3", "--warmup", "1",
                    "--numerics", "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    job = load_manifest(out)
    artifacts = job.model_artifacts(model)
    assert artifacts is not None and artifacts.numerics_reference and artifacts.etrecord
    for run in _runs(out, "local", model):
        rows = assert_gaps_equal_inspector(run / "etdump.etdp", run / "debug_output.bin", Path(artifacts.etrecord),
                                           Path(artifacts.numerics_reference))
        assert rows >= 1
        used = json.loads((run / "result.json").read_text())["debug_buffer_used"]
        assert used == (run / "debug_output.bin").stat().st_size > 0  # only the used part is pulled
        # The size computed from the ETRecord bounds what 3 executions logged, and not by much.
        bound = 3 * intermediate_bytes_per_execution(artifacts.etrecord)
        assert used <= bound <= 1.2 * used + 1024
    if (model, backend) == ("tiny_cnn", "xnnpack"):  # the delegate call is one op, named after the module ending it
        frame = pd.read_csv(out / "local" / model / "numerics.csv")
        assert frame["runtime_ops"].tolist() == ["DELEGATE_CALL"]
        assert frame["module_path"].tolist() == ["head"]
    assert f"local / {model}: ok; final outputs: pass" in result.stdout


@pytest.mark.slow
def test_numerics_cli_names_diverging_ops_and_exits_1(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert etfarm("run", "--model", MLP, "--backend", "portable", "--runs", "1", "--iterations", "2", "--numerics",
                  "--out", str(out), "-q").returncode == 0

    calm = etfarm("numerics", str(out))  # default MSE 1e-4: float32 kernels are far below it
    assert calm.returncode == 0, calm.stdout + calm.stderr
    assert "no op crosses the threshold" in calm.stdout

    # Any difference at all from the AOT reference: every op whose float32 kernel rounds differently.
    strict = etfarm("numerics", str(out), "--metric", "snr", "--threshold", "1000")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "local / tiny_mlp: DIVERGES" in strict.stdout
    assert "divergence starts at op 0: linear [native_call_addmm.out] in fc1 (Linear) at tiny_mlp.py:15" in strict.stdout
    assert "in fc3 (Linear) at tiny_mlp.py:17" in strict.stdout
    assert "diverging: local" in strict.stdout

    # The analysis never imports torch (nor executorch): it reads numpy arrays only.
    code = ("import sys; from orchestrator.numerics import analyze_run; from orchestrator.results.record import RunRecord; "
            f"analyze_run(RunRecord({str(out)!r})); print(sorted(m for m in ('torch', 'executorch') if m in sys.modules))")
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert probe.stdout.strip() == "[]", probe.stdout + probe.stderr

    data = json.loads(etfarm("numerics", str(out), "--json", "--metric", "l1").stdout)
    assert data["metric"] == "l1" and data["models"][0]["comparisons"][0]["against"] == "aot"
    frame = pd.read_csv(out / "local" / "tiny_mlp" / "numerics.csv")
    assert frame["aot_ops"].tolist() == ["linear", "relu", "linear_1", "relu_1", "add", "linear_2", "softmax"]
    assert set(frame["module_path"].dropna()) == {"fc1", "fc2", "fc3"}

    # A damaged debug buffer is named, not a traceback; nothing compared there is exit 3.
    debug = out / "local" / "tiny_mlp" / "run-1" / "debug_output.bin"
    debug.write_bytes(debug.read_bytes()[:100])
    damaged = etfarm("numerics", str(out))
    assert damaged.returncode == 3, damaged.stdout + damaged.stderr
    assert "local / tiny_mlp: NOT COMPARED" in damaged.stdout
    assert f"{debug}: not a whole debug buffer: 100 bytes, the runner wrote" in damaged.stdout  # its size is recorded
    assert "Traceback" not in damaged.stderr


@pytest.mark.slow
def test_too_small_debug_buffer_is_a_clear_error(tmp_path: Path) -> None:
    from orchestrator.artifacts.modelspec import parse_model_spec
    from orchestrator.base.progress import Progress
    from orchestrator.results.model import JobOptions
    from orchestrator.run.engine.job import run_job

    local = DeviceSpec("local", "host", str(tmp_path / "local"))
    options = JobOptions(runs=1, iterations=2, warmup=0, untraced_runs=0, intermediate_outputs=True, debug_buffer_size=4096)
    result = run_job([local], [parse_model_spec(MLP, None)], backend="portable", options=options, out=tmp_path / "run",
                     progress=Progress(quiet=True))
    assert result.exit_code == 1
    error = result.job.device("local").error
    assert "debug buffer of 4096 bytes could not hold every intermediate output" in error


@pytest.mark.slow
def test_numerics_on_rpi5_and_adb_devices(rpi5_device: DeviceSpec, adb_device: DeviceSpec, tmp_path: Path) -> None:
    """The emulated Pi (aarch64 kernels, FMA contraction) differs from this host; adb runs the host runner."""
    local = DeviceSpec("local", "host", str(tmp_path / "local"))
    config = write_inventory(tmp_path / "devices.yaml", [local, rpi5_device, adb_device])
    out = tmp_path / "fleet"
    result = etfarm("run", "--config", str(config), "--devices", "local,rpi5,adbdev", "--model", MLP,
                    "--backend", "portable", "--runs", "1", "--iterations", "2", "--warmup", "0", "--untraced-runs", "0",
                    "--numerics", "--out", str(out))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    job = load_manifest(out)
    artifacts = job.model_artifacts("tiny_mlp")
    for device in ("local", "rpi5", "adbdev"):
        assert (out / device / "tiny_mlp" / "numerics.csv").is_file()
        for run in _runs(out, device, "tiny_mlp"):
            assert_gaps_equal_inspector(run / "etdump.etdp", run / "debug_output.bin", Path(artifacts.etrecord),
                                        Path(artifacts.numerics_reference))

    report = analyze_run(RunRecord(out), Metric.MSE, 0.0)  # threshold 0: any bit of difference diverges
    assert report.reference_device == "local"  # the first of --devices
    by_device = {m.device: m for m in report.models}
    adb_vs_local = by_device["adbdev"].comparison("device:local")
    assert adb_vs_local is not None and not adb_vs_local.diverging  # same host kernels: bit-identical
    rpi5_vs_local = by_device["rpi5"].comparison("device:local")
    assert rpi5_vs_local is not None and rpi5_vs_local.diverging, [op.value for op in rpi5_vs_local.ops]
    first = rpi5_vs_local.first_divergence
    assert first is not None and first.module_path in {"fc1", "fc2", "fc3"} and first.source.startswith("tiny_mlp.py:")
    assert "rpi5" in report.diverging_devices
    # The run's report has the numerics section: every device, what it was compared against, its verdict.
    section = (out / "report.html").read_text().split('<section id="numerics">', 1)[1].split("</section>", 1)[0]
    assert "which op diverges, on which device" in section and "outputs verified" in section
    for device in ("local", "rpi5", "adbdev"):
        assert f"<td>{device}</td><td>tiny_mlp</td><td>AOT reference</td>" in section
    assert "<td>rpi5</td><td>tiny_mlp</td><td>device local</td>" in section
