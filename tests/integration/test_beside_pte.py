"""Issue 31 (2): a .pte given directly is checked against the ETRecord, inputs and reference outputs beside it
before any device is contacted; a runner's failure line is its own last error line, not its log.

Real exports of configs/models/tiny_cnn.py and tiny_mlp.py (`etfarm export --out`, once per module), real
`etfarm run` subprocesses on a `local` device whose workdir is this test's: a refused job leaves no run
directory and never creates the workdir (the device is never contacted). The runner-failure case runs the real
runner on a real foreign inputs file, swapped in on the device by an `exec_prefix` wrapper (as a staging gone
wrong would), so the runtime prints its own log lines before the runner's error.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from device_agents import DeviceSpec
from tests.helpers.inventory import write_inventory

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "configs" / "models"
FAST = ("--runs", "1", "--iterations", "2", "--warmup", "1", "--untraced-runs", "0", "--no-store", "--no-report")
HINT = "(files beside a .pte are taken as its own: move the other model's files away)"

pytestmark = pytest.mark.slow


def etfarm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """tiny_cnn and tiny_mlp (XNNPACK) as `etfarm export --out` writes them: model.pte, etrecord.bin, inputs.etft,
    reference_outputs.etft."""
    root = tmp_path_factory.mktemp("exports")
    for name in ("tiny_cnn", "tiny_mlp"):
        done = etfarm("export", f"{MODELS / name}.py:build", "--out", str(root / name))
        assert done.returncode == 0, done.stderr[-3000:]
    return {"cnn": root / "tiny_cnn", "mlp": root / "tiny_mlp"}


def program_with(tmp_path: Path, exports: dict[str, Path], program: str, **beside: str) -> Path:
    """A folder holding `program`'s model.pte and, beside it, the named files of the models given (file=model)."""
    folder = tmp_path / "given"
    folder.mkdir()
    shutil.copy(exports[program] / "model.pte", folder / "model.pte")
    for name, model in beside.items():
        shutil.copy(exports[model] / name.replace("_etft", ".etft").replace("_bin", ".bin"), folder)
    return folder / "model.pte"


def local(tmp_path: Path, exec_prefix: tuple[str, ...] = ()) -> tuple[Path, Path]:
    workdir = tmp_path / "device-workdir"
    return write_inventory(tmp_path / "devices.yaml", [DeviceSpec("local", "host", str(workdir),
                                                                   exec_prefix=exec_prefix)]), workdir


@pytest.mark.parametrize(("program", "beside", "said"), [
    # the red team's cases: the CNN's convolutions were labelled fc1, fc2, fc3; the device blamed for the inputs;
    # its outputs marked wrong for a (1, 10) against (4, 10) that was visible before anything ran
    ("cnn", {"etrecord_bin": "mlp"}, "etrecord.bin is not the ETRecord of {pte}: its input 0 is float32 [4, 64]; "
                                     "forward takes float32 [1, 3, 64, 64]"),
    ("mlp", {"etrecord_bin": "cnn"}, "etrecord.bin is not the ETRecord of {pte}: its input 0 is float32 [1, 3, 64, 64]; "
                                     "forward takes float32 [4, 64]"),
    ("cnn", {"inputs_etft": "mlp"}, "inputs.etft does not hold the inputs of {pte}: input 0 is float32 [4, 64]; "
                                    "forward takes float32 [1, 3, 64, 64]"),
    ("cnn", {"inputs_etft": "cnn", "reference_outputs_etft": "mlp"},
     "reference_outputs.etft does not hold the outputs of {pte}: output 0 is float32 [4, 10]; forward gives float32 [1, 10]"),
], ids=["cnn-with-mlp-etrecord", "mlp-with-cnn-etrecord", "cnn-with-mlp-inputs", "cnn-with-mlp-reference"])
def test_another_models_files_beside_a_pte_are_refused_before_any_device(tmp_path: Path, exports: dict[str, Path],
                                                                         program: str, beside: dict[str, str],
                                                                         said: str) -> None:
    pte = program_with(tmp_path, exports, program, **beside)
    config, workdir = local(tmp_path)
    out = tmp_path / "run"
    result = etfarm("run", "--config", str(config), "--model", str(pte), *FAST, "--out", str(out))
    lines = [line for line in result.stderr.splitlines() if not line.startswith("[")]
    assert result.returncode == 2, result.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith(f"error: {pte.parent}/"), result.stderr[-3000:]
    assert said.format(pte=pte) in lines[0] and lines[0].endswith(HINT), lines[0]
    assert not out.exists() and not workdir.exists()  # nothing made, the device never contacted


def test_the_programs_own_files_run_and_name_its_own_layers(tmp_path: Path, exports: dict[str, Path]) -> None:
    pte = program_with(tmp_path, exports, "cnn", etrecord_bin="cnn", inputs_etft="cnn", reference_outputs_etft="cnn")
    config, _ = local(tmp_path)
    out = tmp_path / "run"
    result = etfarm("run", "--config", str(config), "--model", str(pte), *FAST, "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "features" in result.stdout and "fc1" not in result.stdout  # the CNN's modules, not another model's
    model = json.loads((out / "manifest.json").read_text())["devices"]["local"]["models"]["model"]
    assert model["verification"]["status"] == "pass"


def test_a_failed_runner_is_known_by_its_own_error_line(tmp_path: Path, exports: dict[str, Path]) -> None:
    """The red team saw ~1 KB of runtime log as the device's error line. Here the real runner gets another model's
    real inputs file on the device: the runtime logs (cpuinfo), then the runner refuses the inputs in one line."""
    foreign = tmp_path / "foreign.etft"
    shutil.copy(exports["mlp"] / "inputs.etft", foreign)
    swap = ("sh", "-c", 'for a; do shift; case $a in --inputs=*) set -- "$@" "--inputs=$0";; *) set -- "$@" "$a";; '
            'esac; done; exec "$@"', str(foreign))
    config, _ = local(tmp_path, swap)
    out = tmp_path / "run"
    result = etfarm("run", "--config", str(config), "--model", f"{MODELS / 'tiny_cnn.py'}:build", *FAST, "--out", str(out))
    assert result.returncode == 1, result.stderr[-3000:]
    error = json.loads((out / "manifest.json").read_text())["devices"]["local"]["error"]
    assert error == (f"[local] runner (tiny_cnn, run-1): input 0: inputs file '{foreign}' has shape [4, 64] but the "
                     "method expects [1, 3, 64, 64]"), error
    log = (out / "local" / "tiny_cnn" / "run-1" / "runner.log").read_text()
    assert "executorch:" in log and "etfarm_runner: error: input 0" in log  # the whole log is kept where it belongs
