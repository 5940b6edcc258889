"""Options shared by several commands, defined once: choices come from the stage that owns them.

`--backend` and `--target` are enums built from `artifacts.lowering.BACKENDS` and
`artifacts.targets.TARGETS`, so `--help` lists the choices and a wrong value is a usage error
before anything runs; `--config` reads ETFARM_CONFIG, and `--help` says so.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.artifacts.lowering import BACKENDS
from orchestrator.artifacts.targets import TARGETS

Backend = StrEnum("Backend", {name: name for name in BACKENDS})  # type: ignore[misc]
Target = StrEnum("Target", {name: name for name in TARGETS})  # type: ignore[misc]

ConfigOption = Annotated[Path | None, typer.Option(
    envvar="ETFARM_CONFIG", help="Device inventory YAML (default ~/.config/etfarm/devices.yaml when present).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout (progress stays on stderr).")]

# Dask TLS (etfarm worker, run --scheduler, farm status): see orchestrator/scale/security.py.
SchedulerOption = Annotated[str | None, typer.Option(
    "--scheduler", envvar="ETFARM_SCHEDULER",
    help="Dask scheduler address (tcp://HOST:PORT or tls://HOST:PORT); default $ETFARM_SCHEDULER.")]
TlsCaOption = Annotated[Path | None, typer.Option(
    "--tls-ca-file", help="CA certificate for Dask TLS (with --tls-cert, --tls-key).")]
TlsCertOption = Annotated[Path | None, typer.Option("--tls-cert", help="This host's certificate for Dask TLS.")]
TlsKeyOption = Annotated[Path | None, typer.Option("--tls-key", help="The private key of --tls-cert.")]
