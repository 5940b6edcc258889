"""`etfarm build`: build (or find cached) the C++ runner for a target."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator.base.progress import Progress
from orchestrator.cli.options import JsonOption, Target
from orchestrator.report import json_text

if TYPE_CHECKING:
    from orchestrator.artifacts.build import RunnerBuild


def register(app: typer.Typer) -> None:
    app.command("build")(build)


def build(
    target: Annotated[Target, typer.Option(help="Target to build the runner for.")] = Target.host,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when cached.")] = False,
    runtime: Annotated[Path | None, typer.Option(
        "--runtime", metavar="PREFIX",
        help="Your own ExecuTorch CMake install prefix instead of the wheel's runtime (every backend it has is linked).",
    )] = None,
    as_json: JsonOption = False,
) -> None:
    """Build the etfarm runner for TARGET against ExecuTorch's runtime; print the runner path.

    android-arm64-v8a without ANDROID_NDK is the linux-aarch64 runner plus the glibc it needs,
    bundled from Debian's aarch64 cross packages and started through its own loader."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.artifacts import build_runner

    result = build_runner(target.value, force=force, log=Progress(), runtime=runtime)
    if as_json:
        typer.echo(json_text({"target": result.target, "cached": result.cached, "runner": str(result.runner),
                              "root": str(result.root), "runtime": result.runtime, "launcher": list(result.launcher),
                              "bundled": list(result.bundled), "executorch_dir": result.executorch_dir,
                              "backends": list(result.backends)}))
        return
    typer.echo(f"{'cached' if result.cached else 'built'}: {result.runner}")
    typer.echo(_describe(result))


def _describe(result: RunnerBuild) -> str:
    lines = [f"runtime: {result.runtime} (executorch_DIR {result.executorch_dir or '?'})"]
    if result.bundled:
        lines.append(f"bundled glibc: {', '.join(result.bundled)}")
    if result.launcher:
        lines.append(f"started on the device as: {' '.join(result.launcher)} ./bin/etfarm_runner ...")
    if result.backends:
        lines.append(f"backends: {', '.join(result.backends)}")
    return "\n".join(lines)
