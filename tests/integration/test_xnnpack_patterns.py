"""The anchors of artifacts/xnnpack_patterns.py against the installed ExecuTorch's own pattern graphs: every pattern
a guarded pass matches calls every anchor of that pass, so a graph lacking one cannot match any pattern and the
skipped work could not have changed the program. An ExecuTorch whose patterns change fails here, not in a user's
lowering. (The programs lowered with and without the guard were byte-identical: benchmarks/README.md, "Exports".)"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.artifacts.export_entry import quiet_export_noise
from orchestrator.artifacts.xnnpack_patterns import ANCHORS, anchor_ops, can_hold

PASSES = "executorch.backends.xnnpack._passes"


def _patterns(module: str) -> list[Any]:
    """The pattern graphs the pass of `module` matches, from the module it takes them from."""
    passes = importlib.import_module(f"{PASSES}.{module}")
    sources: dict[str, Callable[[], Any]] = {
        "convert_to_upsample_bilinear2d": lambda: list(passes.bilinear_2d.get_graphs_dict()),
        "convert_to_sdpa": lambda: list(passes.sdpa.get_graphs()),
    }
    return sources[module]()


@pytest.mark.parametrize(("module", "name"), sorted(ANCHORS))
def test_every_pattern_of_a_guarded_pass_calls_all_its_anchors(module: str, name: str) -> None:
    import torch  # noqa: F401

    quiet_export_noise()
    patterns = _patterns(module)
    assert patterns, f"{module} has no patterns"
    anchors = anchor_ops(ANCHORS[(module, name)])
    for pattern in patterns:
        assert can_hold(pattern.graph, anchors), (name, [n.target for n in pattern.graph.nodes])
    # the pass still takes its patterns from there (its module's text: the class may be guarded in this process)
    text = Path(importlib.import_module(f"{PASSES}.{module}").__file__ or "").read_text()
    assert ("bilinear_2d.get_graphs_dict()" if "bilinear" in module else "sdpa.get_graphs()") in text
