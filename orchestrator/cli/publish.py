"""`etfarm publish --out DIR`: the results store as a static dashboard site (report/dashboard/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.history import StoreOption


def register(app: typer.Typer) -> None:
    app.command("publish")(publish)


def publish(
    out: Annotated[Path, typer.Option("--out", help="The site's directory (made if missing); open DIR/index.html.")],
    store: StoreOption = None,
) -> None:
    """Publish the store as a static site: an index of every series (device, model, configuration) with its trend,
    latest value, verdict and change points; a page per series (latency per night with its interval, change points
    and regressions, load time, memory, LLM figures, top layers); the nights and the regressions. It opens from the
    file system with no network (plotly.js is copied into DIR). Run it again after a night: only what changed is
    read and rewritten. Exit 2 when DIR cannot be written or the store cannot be read (DIR is left as it was)."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.report.dashboard.site import publish as publish_site

    typer.echo(publish_site(out, store).describe())
