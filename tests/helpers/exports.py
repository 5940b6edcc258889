"""Exports made ahead in the test process, so that the `etfarm` processes a test starts find them in the cache.

Why: an `etfarm` process that exports first imports torch.export and ExecuTorch's exir, about 6.7 CPU-s on the
2-vCPU CI machine before any work, and 32 such processes made a third of the suite's CPU time. A test process
imports them once (Inspector checks, in-process jobs), so an export made here costs its own work alone; the cache
is the suite's shared one (tests/conftest.py), so whichever worker exports first, the others find it. The `etfarm`
process then says `export cached` and never imports torch. Tests whose subject is the export itself (its progress
lines, its lock, its failures, what model code prints while it is traced) do not use this.
"""

from __future__ import annotations


def export_ahead(*specs: str, backend: str = "xnnpack", recipes: str | None = None) -> None:
    """Export each `file.py:factory` as `etfarm run --model SPEC --backend BACKEND [--recipe RECIPES]` would, then
    forget the modules its folder gave this process (`import calib` beside the model), as a fresh `etfarm` would
    never have seen them: a test that edits a sibling between jobs gets its new content exported."""
    from orchestrator.app.bisect_range import forget_modules
    from orchestrator.artifacts.lowering import export_model
    from orchestrator.artifacts.modelspec import parse_model_spec
    from orchestrator.artifacts.recipes import parse_recipes

    for text in specs:
        spec = parse_model_spec(text)
        try:
            for recipe in parse_recipes(recipes) or (None,):
                export_model(spec, backend, recipe=recipe)
        finally:
            forget_modules(spec.source.parent)
