"""`etfarm export`: lower a model spec to .pte + ETRecord + inputs + reference outputs (with `--recipe`, through
ExecuTorch's export API: docs/how-to/quantized.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from orchestrator.artifacts import copy_artifacts, export_model, parse_model_spec
from orchestrator.artifacts.recipes import check_recipe_backend, parse_recipes
from orchestrator.base.codec import encode
from orchestrator.base.progress import Progress
from orchestrator.cli.options import Backend, JsonOption, RecipeOption, recipes_joined
from orchestrator.report import json_text

if TYPE_CHECKING:
    from orchestrator.artifacts import ExportedModel


def register(app: typer.Typer) -> None:
    app.command("export")(export)


def export(
    model: Annotated[str, typer.Argument(help="file.py:factory, package.module:factory, or a .pte")],
    backend: Annotated[Backend, typer.Option(help="Lowering backend.")] = Backend.xnnpack,
    recipe: RecipeOption = None,
    out: Annotated[Path | None, typer.Option(help="Also copy the artifacts to this directory.")] = None,
    name: Annotated[str | None, typer.Option(help="Model name (default: the file or module name).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Export again even when cached.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Lower MODEL to ExecuTorch (cached by content hash) and print where the artifacts are."""
    recipes = parse_recipes(recipes_joined(recipe))
    check_recipe_backend(backend.value, recipes)
    spec = parse_model_spec(model, name)
    documents = []
    for each in recipes or (None,):
        exported = export_model(spec, backend.value, recipe=each, force=force, log=Progress())
        folder = out / each.label if out and len(recipes) > 1 and each else out  # one folder per recipe of a list
        paths = copy_artifacts(exported, folder) if folder else [p for p in _produced(exported) if p]
        if not as_json:
            for path in paths:
                typer.echo(str(path))
        documents.append({**_document(exported), "files": [str(p) for p in paths]})
    if as_json:
        typer.echo(json_text(documents[0] if len(documents) == 1 else {"exports": documents}))


def _produced(exported: ExportedModel) -> tuple[Path | None, ...]:
    return (exported.pte, exported.etrecord, exported.inputs, exported.reference_outputs, exported.numerics_reference,
            exported.eager_outputs, exported.eager_reference)


def _document(exported: ExportedModel) -> dict[str, Any]:
    def text(path: Path | None) -> str | None:
        return str(path) if path else None

    return {"name": exported.name, "spec": exported.spec, "backend": exported.backend, "key": exported.key,
            "pte": str(exported.pte), "etrecord": text(exported.etrecord), "inputs": text(exported.inputs),
            "reference_outputs": text(exported.reference_outputs),
            "numerics_reference": text(exported.numerics_reference),
            **({"recipe": encode(exported.recipe), "eager_outputs": text(exported.eager_outputs),
                "eager_reference": text(exported.eager_reference)} if exported.recipe else {})}
