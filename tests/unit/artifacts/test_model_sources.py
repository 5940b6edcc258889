"""orchestrator.artifacts.model_sources and the export key: local imports are part of the model."""

from __future__ import annotations

from pathlib import Path

from orchestrator.artifacts.lowering import export_key
from orchestrator.artifacts.model_sources import local_sources
from orchestrator.artifacts.modelspec import parse_model_spec


def make_tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "blocks.py").write_text("from . import shared\nWIDTH = 4\n")
    (tmp_path / "pkg" / "shared.py").write_text("GAIN = 2\n")
    (tmp_path / "common.py").write_text("import math\nDEPTH = 3\n")
    (tmp_path / "unrelated.py").write_text("X = 1\n")
    model = tmp_path / "model.py"
    model.write_text("import torch\nimport common\nfrom pkg.blocks import WIDTH\n\ndef build():\n    return None\n")
    return model


def test_local_sources_follow_imports_transitively_and_skip_installed_packages(tmp_path: Path) -> None:
    model = make_tree(tmp_path)
    names = [p.relative_to(tmp_path).as_posix() for p in local_sources(model)]
    assert names == ["common.py", "model.py", "pkg/__init__.py", "pkg/blocks.py", "pkg/shared.py"]


def test_editing_an_imported_module_changes_the_export_key(tmp_path: Path) -> None:
    model = make_tree(tmp_path)
    spec = parse_model_spec(f"{model}:build")
    before = export_key(spec, "xnnpack")
    (tmp_path / "unrelated.py").write_text("X = 2\n")
    assert export_key(spec, "xnnpack") == before
    (tmp_path / "common.py").write_text("import math\nDEPTH = 4\n")
    after_common = export_key(spec, "xnnpack")
    assert after_common != before
    (tmp_path / "pkg" / "shared.py").write_text("GAIN = 3\n")  # two imports away
    assert export_key(spec, "xnnpack") != after_common
    assert export_key(spec, "portable") != export_key(spec, "xnnpack")
