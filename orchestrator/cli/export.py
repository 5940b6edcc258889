"""`etfarm export`: lower a model spec to .pte + ETRecord + inputs + reference outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.artifacts import copy_artifacts, export_model, parse_model_spec
from orchestrator.cli.options import Backend, JsonOption
from orchestrator.progress import Progress
from orchestrator.report import json_text


def register(app: typer.Typer) -> None:
    app.command("export")(export)


def export(
    model: Annotated[str, typer.Argument(help="file.py:factory, package.module:factory, or a .pte")],
    backend: Annotated[Backend, typer.Option(help="Lowering backend.")] = Backend.xnnpack,
    out: Annotated[Path | None, typer.Option(help="Also copy the artifacts to this directory.")] = None,
    name: Annotated[str | None, typer.Option(help="Model name (default: the file or module name).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Export again even when cached.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Lower MODEL to ExecuTorch (cached by content hash) and print where the artifacts are."""
    exported = export_model(parse_model_spec(model, name), backend.value, force=force, log=Progress())
    produced = (exported.pte, exported.etrecord, exported.inputs, exported.reference_outputs, exported.numerics_reference)
    paths = copy_artifacts(exported, out) if out else [p for p in produced if p]
    if as_json:
        typer.echo(json_text({"name": exported.name, "spec": exported.spec, "backend": exported.backend, "key": exported.key,
                              "pte": str(exported.pte), "etrecord": str(exported.etrecord) if exported.etrecord else None,
                              "inputs": str(exported.inputs) if exported.inputs else None,
                              "reference_outputs": str(exported.reference_outputs) if exported.reference_outputs else None,
                              "numerics_reference": str(exported.numerics_reference) if exported.numerics_reference else None,
                              "files": [str(p) for p in paths]}))
        return
    for path in paths:
        typer.echo(str(path))
