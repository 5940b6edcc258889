"""Export recipes as a configuration (docs/how-to/quantized.md): `etfarm run --recipe fp32,int8-static` on the
host and on the emulated Raspberry Pi 5 (SSH + qemu) in one job, real exports through ExecuTorch's export API,
real runners; per-op statistics checked against Inspector on the pulled ETDumps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from device_agents import DeviceSpec
from orchestrator.emulate.fleet import BOARDS, board_prefix
from tests.helpers.exports import export_ahead
from tests.helpers.inspector_stats import assert_stats_equal_inspector
from tests.helpers.inventory import write_inventory

from orchestrator.emulate.sshd import start_sshd  # tests/integration/testbed, on the path by conftest.py  # isort: skip
from orchestrator.results.record import RunRecord

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
CNN = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"
MODELS = ("tiny_cnn-fp32", "tiny_cnn-int8-static")
DEVICES = ("local", "rpi5")


def etfarm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=1200, check=False, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`local` and an emulated Raspberry Pi 5 (an sshd whose runner runs under qemu-aarch64), for the module. Its CPU
    is the Pi 5's Cortex-A76: under qemu 7.2's default `max` CPU, XNNPACK picks int8 kernels that qemu computes
    wrongly (static int8 tiny_cnn: SNR 1.3 dB against eager, where the host and a Cortex-A76 agree exactly)."""
    prefix = board_prefix(BOARDS["rpi5"])
    root = tmp_path_factory.mktemp("recipes-devices")
    host = start_sshd(root / "sshd")
    rpi5 = host.spec("rpi5", root / "rpi5-workdir", target="linux-aarch64", exec_prefix=prefix)
    yield write_inventory(root / "devices.yaml", [rpi5, DeviceSpec("local", "host", str(root / "local"))])
    host.stop()


@pytest.fixture(scope="module")
def job(inventory: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One job: fp32 and static int8 side by side on both devices, intermediate outputs dumped (--numerics)."""
    out = tmp_path_factory.mktemp("recipes") / "run"
    export_ahead(CNN, recipes="fp32,int8-static")
    result = etfarm("run", "--config", str(inventory), "--devices", ",".join(DEVICES), "--model", CNN,
                    "--recipe", "fp32,int8-static", "--runs", "2", "--iterations", "3", "--warmup", "1",
                    "--numerics", "--out", str(out), "--no-store")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-4000:]
    return out, result


def test_both_recipes_run_on_both_devices_with_statistics_equal_to_inspector(job: tuple[Path, object]) -> None:
    out, _ = job
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["recipes"] == ["fp32", "int8-static"]
    stats = pd.read_csv(out / "stats.csv")
    for model in MODELS:
        artifacts = manifest["models"][model]
        assert artifacts["recipe"]["label"] == model.removeprefix("tiny_cnn-")
        for device in DEVICES:
            entry = manifest["devices"][device]["models"][model]
            assert entry["status"] == "ok" and entry["verification"]["status"] == "pass", entry
            etdumps = sorted((out / device / model).glob("run-*/etdump.etdp"))
            assert len(etdumps) == 2
            own = stats[(stats["device"] == device) & (stats["model"] == model)].drop(columns=["device", "model"])
            assert_stats_equal_inspector(own, etdumps, Path(artifacts["etrecord"]))
    # The int8 program is at most 40 % of the fp32 one, and the rpi5 really ran the aarch64 runner.
    fp32, int8 = (Path(manifest["models"][m]["pte"]).stat().st_size for m in MODELS)
    assert int8 <= 0.4 * fp32
    assert "qemu-aarch64" in (out / "rpi5" / MODELS[1] / "run-1" / "runner.log").read_text().splitlines()[0]


def test_accuracy_against_the_fp32_eager_model_per_device(job: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, result = job
    manifest = json.loads((out / "manifest.json").read_text())
    int8_recipe = manifest["models"]["tiny_cnn-int8-static"]["recipe"]
    assert int8_recipe["quantized"] and int8_recipe["calibration_batches"] == 1
    assert int8_recipe["calibration"] == "example inputs"
    for device in DEVICES:
        fp32 = manifest["devices"][device]["models"]["tiny_cnn-fp32"]["accuracy"]
        int8 = manifest["devices"][device]["models"]["tiny_cnn-int8-static"]["accuracy"]
        assert fp32["runs"] == int8["runs"] == 2
        # fp32 is the eager model to float rounding; int8 pays for its size, within what a calibrated CNN keeps.
        assert fp32["snr_db"] > 100 and fp32["max_abs_error"] < 1e-5
        assert 20 < int8["snr_db"] < fp32["snr_db"] and 0 < int8["max_abs_error"] < 0.05
        assert int8["top1_agreement"] == 1.0 and int8["top1_rows"] == 1
        said = [line for line in result.stdout.splitlines() if line.startswith(f"{device} tiny_cnn-int8-static: ")]
        assert len(said) == 1 and f"; outputs against fp32 eager: SNR {int8['snr_db']:.1f} dB, max abs error " \
                                  f"{int8['max_abs_error']:.3g}, top-1 agrees 100%" in said[0]


def test_the_report_joins_layers_across_recipes_and_devices(job: tuple[Path, object]) -> None:
    from orchestrator.report.builders.report import build_report
    from orchestrator.report.escape import md_text
    from orchestrator.report.page.sections import run_page
    from orchestrator.report.render.charts import report_charts
    from orchestrator.report.render.markdown import render_markdown

    out, _ = job
    report = build_report(RunRecord(out))
    (group,) = report.quantized
    assert group.name == "tiny_cnn" and group.recipes == ("fp32", "int8-static") and group.baseline == "fp32"
    assert [d.device for d in group.devices] == list(DEVICES)
    layers = {d.device: {layer.layer: layer for layer in d.layers} for d in group.devices}
    convolutions = ("features.0", "features.3", "features.6")
    assert set(layers["local"]) == set(layers["rpi5"])  # one layer set, whatever each CPU's kernels are called
    for device in DEVICES:
        for conv in convolutions:  # every convolution timed under both recipes, its speed-up from those times
            fp32_ms, int8_ms = layers[device][conv].p50_ms
            assert fp32_ms and int8_ms and layers[device][conv].speedup[1] == pytest.approx(fp32_ms / int8_ms)
            assert "convolution" in layers[device][conv].ops  # the ATen op, by identity (op_identity.py)
    rows = {(d.device, r.recipe): r for d in group.devices for r in d.rows}
    for device in DEVICES:
        assert rows[(device, "int8-static")].accuracy is not None
        assert rows[(device, "int8-static")].program_bytes <= 0.4 * rows[(device, "fp32")].program_bytes
    ((recipe, layer_accuracy),) = group.layer_accuracy
    assert recipe == "int8-static" and layer_accuracy.error is None
    assert {layer.key.layer for layer in layer_accuracy.layers} >= set(convolutions)
    worst = layer_accuracy.worst
    assert worst is not None and worst.added_error == max(layer.added_error for layer in layer_accuracy.layers)
    charts = report_charts(report)
    chart = charts.of("tiny_cnn", "latency-accuracy")  # latency against SNR: a point per device and recipe
    assert chart is not None and all(f"{device} int8-static: p50 " in chart.svg for device in DEVICES)
    whole = run_page(report, charts)
    assert ("quantized", "#quantized") in whole.nav  # the section registry names its navigation label
    page = render_markdown(whole, chart_dir="charts")
    assert f"![{md_text(chart.title)}](charts/{chart.stem}.svg)" in page  # the chart, placed in its section
    assert chart.title == "tiny_cnn: latency against accuracy per device"
    assert f"The layer that loses most: **{worst.key.label}**" in page
    snr = rows[("rpi5", "int8-static")].accuracy.snr_db
    assert "On **rpi5**: `int8-static` runs" in page and f"outputs **{snr:.1f} dB SNR**" in page
    assert "calibrated on 1 batch: the example inputs alone, a weak calibration" in page


def test_the_layer_that_loses_most_is_the_one_built_to(tmp_path: Path) -> None:
    """outlier_cnn's `lossy` convolution has every live weight rounded to zero by per-channel int8."""
    from orchestrator.artifacts.lowering import export_model
    from orchestrator.artifacts.modelspec import parse_model_spec
    from orchestrator.artifacts.recipes import parse_recipes
    from orchestrator.numerics.layer_accuracy import layer_accuracy

    spec = parse_model_spec(f"{REPO / 'tests' / 'integration' / 'models' / 'outlier_cnn.py'}:build")
    (recipe,) = parse_recipes("int8-static")
    model = export_model(spec, "xnnpack", recipe=recipe)
    found = layer_accuracy(model.name, model.numerics_reference, model.eager_reference)
    assert found.worst is not None and found.worst.key.label == "lossy conv2d"
    before = [layer for layer in found.layers if layer.key.module_path in ("stem", "act")]
    assert before and all(layer.snr_db is not None and layer.snr_db > 30 for layer in before)


SMALL_CNN = '''
import torch
from torch import nn
from orchestrator.artifacts.calibration import CalibratedModel


def build():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 4)).eval()
    return CalibratedModel(model, (torch.randn(1, 3, 16, 16),), calibration=[(torch.randn(1, 3, 16, 16),) for _ in range(4)])
'''


def test_a_recipe_export_is_cached_another_recipe_is_a_new_one(tmp_path: Path) -> None:
    """A recipe is part of the export's key: the same recipe again is the cached export, another recipe (here a
    factory's own ExportRecipe, int8 dynamic) a new one."""
    model, recipes = tmp_path / "small_cnn.py", tmp_path / "my_recipes.py"
    model.write_text(SMALL_CNN)
    recipes.write_text(RECIPE_FACTORIES)
    env = {"ETFARM_CACHE_DIR": str(tmp_path / "cache")}  # nothing of this model exported before

    def export(recipe: str) -> tuple[dict[str, object], str]:
        result = etfarm("export", f"{model}:build", "--recipe", recipe, "--json", env=env)
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout), result.stderr

    first, said = export("int8-static")
    assert "exporting small_cnn with recipe int8-static" in said
    assert first["recipe"]["calibration_batches"] == 4 and first["recipe"]["calibration"] == "model"
    again, said = export("int8-static")
    assert "export cached: small_cnn (recipe int8-static)" in said and again["key"] == first["key"]
    other, said = export(f"{recipes}:dynamic")
    assert "exporting small_cnn with recipe dynamic" in said and other["key"] != first["key"]
    assert Path(other["pte"]).parent != Path(first["pte"]).parent
    found = other["recipe"]
    assert found["label"] == "dynamic" and found["name"] == "xnnpack_pt2e_int8_dynamic_per_channel"
    assert found["quantized"] and found["calibration"] == "model" and found["calibration_batches"] == 4


def test_a_recipe_that_cannot_quantize_a_model_fails_that_configuration_only(tmp_path: Path) -> None:
    narrow = f"{REPO / 'tests' / 'integration' / 'models' / 'narrow_linear.py'}:build"
    out = tmp_path / "run"
    result = etfarm("run", "--model", narrow, "--recipe", "fp32,int8da-int4w", "--runs", "1", "--iterations", "2",
                    "--untraced-runs", "0", "--out", str(out), "--no-store", "--no-report")
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-3000:]
    lines = [line for line in result.stdout.splitlines() if "NOT EXPORTED" in line]
    assert lines == [f"narrow_linear-int8da-int4w NOT EXPORTED: exporting {narrow!r} with recipe int8da-int4w failed: "
                     "AssertionError: Delegation to XNNPACK requires group_size to be a multiple of 32, but got 20"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "partial" and list(manifest["models"]) == ["narrow_linear-fp32"]
    assert [(x["name"], x["recipe"]) for x in manifest["left_out"]] == [("narrow_linear-int8da-int4w", "int8da-int4w")]
    assert manifest["devices"]["local"]["models"]["narrow_linear-fp32"]["verification"]["status"] == "pass"


@pytest.mark.parametrize(("args", "message"), [
    (("--recipe", "int9"), "error: --recipe: unknown recipe 'int9'; this ExecuTorch offers fp32, int8-dynamic, "
                           "int8-static, int8-static-per-tensor, int8da-int4w, int8da-int4w-per-tensor"),
    (("--recipe", "int8-static", "--backend", "portable"), "error: --backend portable: recipe int8-static lowers to "
                                                            "xnnpack"),
])
def test_bad_recipes_are_one_line_and_exit_2(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    result = etfarm("run", "--model", CNN, *args, "--out", str(tmp_path / "run"))
    assert result.returncode == 2 and result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_an_llm_under_a_recipe_export_llama_lacks_is_left_out_naming_what_it_offers(tmp_path: Path) -> None:
    """An LLM takes the recipes export_llama has a counterpart for; static int8 it has not: that configuration is
    left out (the job's only one here, so the job stops, exit 2, before any device)."""
    llm = f"{REPO / 'configs' / 'models' / 'tiny_llama.py'}:build"
    result = etfarm("run", "--model", llm, "--recipe", "int8-static", "--out", str(tmp_path / "run"))
    assert result.returncode == 2, result.stderr
    line = result.stderr.splitlines()[-1]  # after the progress line saying the export began
    assert line.startswith("error: recipe int8-static does not apply to ") and "Traceback" not in result.stderr
    assert "an LLM exported by export_llama: it quantizes with its own options, of which etfarm maps FP32 (no flags), " \
           "PT2E_INT8_DYNAMIC_PER_CHANNEL (--pt2e_quantize xnnpack_dynamic)" in line


RECIPE_FACTORIES = '''
from executorch.backends.xnnpack.recipes.xnnpack_recipe_types import XNNPackRecipeType
from executorch.export import ExportRecipe


def dynamic():
    return ExportRecipe.get_recipe(XNNPackRecipeType.PT2E_INT8_DYNAMIC_PER_CHANNEL)


def not_a_recipe():
    return {"quantize": True}
'''

BAD_CALIBRATION = SMALL_CNN.replace("torch.randn(1, 3, 16, 16),) for _ in range(4)",
                                    "torch.randn(1, 3, 8, 8),) for _ in range(4)")


def test_a_factorys_mistakes_are_one_line_and_exit_2(tmp_path: Path) -> None:
    """A factory returning something else than an ExportRecipe, and calibration batches of another shape (a
    factory's own recipe that works: test_a_recipe_export_is_cached_another_recipe_is_a_new_one)."""
    model, recipes, bad = tmp_path / "small_cnn.py", tmp_path / "my_recipes.py", tmp_path / "bad_cnn.py"
    model.write_text(SMALL_CNN)
    recipes.write_text(RECIPE_FACTORIES)
    bad.write_text(BAD_CALIBRATION)
    wrong = etfarm("export", f"{model}:build", "--recipe", f"{recipes}:not_a_recipe")
    assert wrong.returncode == 2 and wrong.stderr.splitlines()[-1] == (
        f"error: recipe '{recipes}:not_a_recipe': not_a_recipe() returned dict, not an executorch.export.ExportRecipe")
    misshapen = etfarm("export", f"{bad}:build", "--recipe", "int8-static")
    assert misshapen.returncode == 2 and misshapen.stderr.splitlines()[-1] == (
        f"error: model spec '{bad}:build': calibration batch 0 is not a tuple of tensors shaped like the example inputs")
