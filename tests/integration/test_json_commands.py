"""`build --json` and `export --json`: one JSON document on stdout, progress on stderr (real export and build)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MLP = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"


def etfarm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_export_json(tmp_path: Path) -> None:
    result = etfarm("export", MLP, "--backend", "portable", "--name", "mlp", "--out", str(tmp_path / "a"), "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    view = json.loads(result.stdout)
    assert view["name"] == "mlp" and view["backend"] == "portable" and Path(view["pte"]).is_file()
    assert Path(view["etrecord"]).is_file() and Path(view["reference_outputs"]).is_file()
    assert view["files"] and all(Path(f).parent == tmp_path / "a" for f in view["files"])


@pytest.mark.slow
def test_build_json() -> None:
    result = etfarm("build", "--target", "host", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    view = json.loads(result.stdout)
    assert view["target"] == "host" and isinstance(view["cached"], bool)
    assert Path(view["runner"]).is_file() and Path(view["runner"]).is_relative_to(Path(view["root"]))
