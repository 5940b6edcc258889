"""`etfarm build`: build (or find cached) the C++ runner for a target."""

from __future__ import annotations

from typing import Annotated

import typer

from orchestrator.cli.options import JsonOption, Target


def register(app: typer.Typer) -> None:
    app.command("build")(build)


def build(
    target: Annotated[Target, typer.Option(help="Target to build the runner for.")] = Target.host,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when cached.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Build the etfarm runner for TARGET against ExecuTorch's runtime; print the runner path."""
    from orchestrator.artifacts import build_runner
    from orchestrator.progress import Progress
    from orchestrator.report import json_text

    result = build_runner(target.value, force=force, log=Progress())
    if as_json:
        typer.echo(json_text({"target": result.target, "cached": result.cached, "runner": str(result.runner),
                              "root": str(result.root)}))
        return
    typer.echo(f"{'cached' if result.cached else 'built'}: {result.runner}")
