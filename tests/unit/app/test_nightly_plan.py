"""Nightly plans: what a valid plan reads as, and one-line errors naming the file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.app.nightly_plan import PlanModel, load_plan
from orchestrator.base.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]


def plan(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return path


def test_the_example_plan_reads() -> None:
    loaded = load_plan(REPO / "configs" / "nightly.yaml")
    assert loaded.devices == ("local",) and loaded.runs == 20 and loaded.threshold == pytest.approx(0.03)
    assert loaded.models[1] == PlanModel("configs/models/tiny_mlp.py:build", "portable", "tiny-mlp-portable")
    assert loaded.baseline == "last-good" and loaded.out == loaded.report / "runs"
    assert loaded.settings.auto_noise_floor and loaded.noise_floor is None
    assert loaded.center == "auto" and loaded.settings.center == "auto" and loaded.reference is None


def test_a_pinned_reference_and_the_centers(tmp_path: Path) -> None:
    base = "devices: [a]\nmodels: [m.py:build]\nreport: r\n"
    assert load_plan(plan(tmp_path, base)).center == "auto"  # the default (issue 37)
    loaded = load_plan(plan(tmp_path, base + "reference: 20261101-120000-ab12\ncenter: fast-state\n"))
    assert loaded.reference == "20261101-120000-ab12" and loaded.center == "fast-state"  # old plans still read


def test_defaults_and_forms(tmp_path: Path) -> None:
    loaded = load_plan(plan(tmp_path, "devices: a,b\nmodels: [m.py:build]\nreport: r\nthreshold: 7\n"))
    assert loaded.devices == ("a", "b") and loaded.threshold == pytest.approx(0.07)
    assert (loaded.runs, loaded.iterations, loaded.warmup, loaded.op_threshold) == (10, 50, 5, 0.10)
    assert loaded.models == (PlanModel("m.py:build", "xnnpack"),)


def test_noise_floor_is_auto_by_default_or_a_percentage(tmp_path: Path) -> None:
    base = "devices: [a]\nmodels: [m.py:build]\nreport: r\n"
    auto = load_plan(plan(tmp_path, base)).settings
    assert auto.auto_noise_floor and auto.noise_floor == 0.0
    for text, floor in (("3%", 0.03), ("4", 0.04), ("0%", 0.0)):
        fixed = load_plan(plan(tmp_path, base + f"noise_floor: {text}\n")).settings
        assert not fixed.auto_noise_floor and fixed.noise_floor == pytest.approx(floor)
    assert load_plan(plan(tmp_path, base + "noise_floor: auto\n")).settings.auto_noise_floor


@pytest.mark.parametrize(("text", "where"), [
    ("devices: [a]\nmodels: [m.py:build]\n", "report: required"),
    ("devices: [a]\nmodels: [m.py:build]\nreport: r\nrunz: 3\n", "runz: unknown key"),
    ("devices: [a]\nmodels: [m.py:build]\nreport: r\nruns: 0\n", "runs: expected a whole number >= 1"),
    ("devices: [a]\nmodels: [m.py:build]\nreport: r\nthreshold: lots\n", "threshold: expected a percentage"),
    ("devices: [a]\nmodels: [{backend: portable}]\nreport: r\n", "models[0].spec: required"),
    ("devices: [a]\nmodels: [{spec: m.py:build, colour: red}]\nreport: r\n", "models[0].colour: unknown key"),
    ("devices: [a]\nmodels: [m.py:build]\nreport: r\nbackend: vulkan\n", "backend: unknown backend 'vulkan'"),
    ("devices: [a]\nmodels: [{spec: m.py:build, backend: xnnpak}]\nreport: r\n", "models[0].backend: unknown backend"),
    ("- just\n- a list\n", "a plan is a mapping"),
    ("devices: [a\n", "not valid YAML"),
    ("devices: [a]\nmodels: [m.py:build]\nreport: r\nnoise_floor: lots\n", "noise_floor: expected auto or a percentage"),
    ("devices: [a]\nmodels: [m.py:build]\nreport: r\nnoise_floor: -2%\n", "noise_floor: expected auto or a percentage"),
    ("devices: [a]\nmodels: [m.py:build]\nreport: r\nnoise_floor: true\n", "noise_floor: expected auto or a percentage"),
    ("devices: [a]\nmodels: [m.py:build]\nreport: r\nrecipe: int9\n", "recipe: unknown recipe 'int9'; this ExecuTorch "
                                                                       "offers fp32, int8-dynamic, int8-static"),
    ("devices: [a]\nmodels: [m.py:build]\nreport: r\nrecipe: [fp32, fp32]\n", "recipe: recipe 'fp32' given twice"),
    ("devices: [a]\nmodels: [m.py:build]\nreport: r\nrecipe: [3]\n", "recipe: expected a recipe name or a list"),
    ("devices: [a]\nmodels: [{spec: m.py:build, backend: portable}]\nreport: r\nrecipe: int8-static\n",
     "models[0].backend: recipe int8-static lowers to xnnpack"),
    ("devices: [a]\nmodels: [m.py:build]\nreport: r\nreference: [x]\n", "reference: expected a non-empty string"),
    ("devices: [a]\nmodels: [m.py:build]\nreport: r\ncenter: median\n", "center: expected auto, mean, fast, fast-state"),
])
def test_bad_plans_name_file_and_key(tmp_path: Path, text: str, where: str) -> None:
    path = plan(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_plan(path)
    assert str(err.value).startswith(str(path)) and where in str(err.value)
    assert err.value.exit_code == 2


def test_recipes_sweep_as_run_does(tmp_path: Path) -> None:
    loaded = load_plan(plan(tmp_path, "devices: [a]\nmodels: [m.py:build]\nreport: r\nrecipe: [fp32, int8-static]\n"))
    assert loaded.recipes == ("fp32", "int8-static") and loaded.options().recipes == ("fp32", "int8-static")
    one = load_plan(plan(tmp_path, "devices: [a]\nmodels: [m.py:build]\nreport: r\nrecipe: int8-dynamic\n"))
    assert one.options().recipes == ("int8-dynamic",)
