"""Issue 35 item 2: model code (a factory, its calibration sequence, a recipe factory and its calibration, a forward)
runs inside one guard (artifacts/modelspec.py `model_code`): whatever it raises is the model's error, one line
naming the spec and what ran, exit 2; never `internal error (bug)`. Real exports through the real CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

MODELS = Path(__file__).resolve().parent / "models"
CODE = f"{MODELS / 'raising_code.py'}"


def export(tmp_path: Path, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "orchestrator.cli", "export", *args, "--out", str(tmp_path / "o")],
                            capture_output=True, text=True, timeout=600)
    lines = [line for line in result.stderr.splitlines() if not line.startswith("[")]
    assert result.returncode == 2, result.stderr[-3000:]
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert len(lines) == 1, lines
    assert not (tmp_path / "o").exists()
    return lines[0]


@pytest.mark.parametrize(("spec", "recipe", "said"), [
    (f"{CODE}:calibration_raises", "int8-static",
     f"error: model spec '{CODE}:calibration_raises': its CalibratedModel.calibration raised ValueError: getitem from "
     "model code"),
    (f"{CODE}:plain", f"{CODE}:recipe_calibration_raises",
     f"error: recipe '{CODE}:recipe_calibration_raises': its calibration_inputs_fn raised KeyError: \"from the "
     "recipe's calibration\""),
    (f"{CODE}:plain", f"{CODE}:recipe_raises",
     f"error: model spec '{CODE}:recipe_raises': factory recipe_raises() raised RuntimeError: no recipe today"),
    (f"{CODE}:forward_raises", "fp32",
     f"error: model spec '{CODE}:forward_raises': running the model on its example inputs raised IndexError: forward "
     "from model code"),
])
def test_what_model_code_raises_is_the_models_one_line_error(tmp_path: Path, spec: str, recipe: str, said: str) -> None:
    assert export(tmp_path, spec, "--recipe", recipe) == said
