"""The structure diff sees shapes: two real exports of one model, the second with every layer 8x wider."""

from __future__ import annotations

from pathlib import Path

from orchestrator.profiles.model_structure import read_structure, structure_diff
from orchestrator.report.model import ComparisonView, PairStructure
from orchestrator.report.page.comparison import structure_section
from tests.helpers.etdumps import PORTABLE, export_mlp


def _words(section: object) -> str:
    return repr(section)


def test_a_model_made_8x_wider_names_its_changed_layers_and_shapes(tmp_path: Path) -> None:
    narrow = read_structure(export_mlp(tmp_path / "a", PORTABLE, layers=2, width=16).etrecord)
    wide = read_structure(export_mlp(tmp_path / "b", PORTABLE, layers=2, width=128).etrecord)
    assert narrow is not None and wide is not None
    assert [o.key.label for o in narrow.ops if o.key.op_name == "addmm"] == ["layers.0 addmm", "layers.1 addmm"]
    diff = structure_diff(narrow, wide, (70_000, 520_000))
    assert not diff.ops_added and not diff.ops_removed and not diff.op_counts  # the same ops, wider
    shapes = {(c.what, c.a, c.b) for c in diff.shapes}
    assert ("layers.0 weight", "[16, 16]", "[128, 128]") in shapes and ("layers.1 bias", "[16]", "[128]") in shapes
    assert ("layers.0 addmm output", "[2, 16]", "[2, 128]") in shapes and ("(model) relu #2 output", "[2, 16]",
                                                                           "[2, 128]") in shapes
    assert diff.parameters == (2 * (16 * 16 + 16), 2 * (128 * 128 + 128)) and not diff.same
    assert structure_diff(narrow, narrow).same

    # On the page: the changed layers and shapes, never "Same ops in both runs".
    pair = PairStructure("local", "mlp", (), 2, 2, (), (), True, model_diff=diff)
    page = _words(structure_section(ComparisonView(None, "t", (pair,), (), (), (), ())))  # type: ignore[arg-type]
    assert "Same ops in both runs" not in page and "the model changed" in page
    assert "layers.0 weight" in page and "[16, 16] -> [128, 128]" in page and "parameters 544 -> 33,024" in page
    assert "program 68.4 KiB -> 507.8 KiB" in page
    same = PairStructure("local", "mlp", (), 2, 2, (), (), True, model_diff=structure_diff(narrow, narrow))
    assert "Same ops in both runs" in _words(structure_section(ComparisonView(None, "t", (same,), (), (), (), ())))  # type: ignore[arg-type]
