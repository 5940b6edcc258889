"""`etfarm build`: build (or find cached) the C++ runner for a target."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("build")(build)


def build(
    target: Annotated[str, typer.Option(help="host, linux-aarch64 or android-arm64-v8a")] = "host",
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when cached.")] = False,
) -> None:
    """Build the etfarm runner for TARGET against ExecuTorch's runtime; print the runner path."""
    from orchestrator.artifacts.build import build_runner
    from orchestrator.progress import Progress

    result = build_runner(target, force=force, log=Progress())
    typer.echo(f"{'cached' if result.cached else 'built'}: {result.runner}")
