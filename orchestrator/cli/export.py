"""`etfarm export`: lower a model spec to .pte + ETRecord + inputs + reference outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("export")(export)


def export(
    model: Annotated[str, typer.Argument(help="file.py:factory, package.module:factory, or a .pte")],
    backend: Annotated[str, typer.Option(help="xnnpack or portable")] = "xnnpack",
    out: Annotated[Path | None, typer.Option(help="Also copy the artifacts to this directory.")] = None,
    name: Annotated[str | None, typer.Option(help="Model name (default: the file or module name).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Export again even when cached.")] = False,
) -> None:
    """Lower MODEL to ExecuTorch (cached by content hash) and print where the artifacts are."""
    from orchestrator.artifacts.lowering import copy_artifacts, export_model
    from orchestrator.artifacts.modelspec import parse_model_spec
    from orchestrator.progress import Progress

    exported = export_model(parse_model_spec(model, name), backend, force=force, log=Progress())
    paths = copy_artifacts(exported, out) if out else [p for p in (exported.pte, exported.etrecord, exported.inputs,
                                                                    exported.reference_outputs, exported.numerics_reference) if p]
    for path in paths:
        typer.echo(str(path))
