"""`etfarm` command line. Thin: each command module parses options and calls a stage.

Conventions every command keeps (README "A tour of the CLI"):
- errors print as exactly one `error:` line on stderr (multi-line messages are folded by
  `errors.one_line`), exit 0 ok / 1 a device failed / 2 usage, config or data error / 130 Ctrl-C;
  an unexpected exception prints one `error: internal error (bug): ...` line and exits 1, the
  traceback going to a file under the cache;
- `-h`/`--help`, `--version`, `-v/--verbose` (device commands at DEBUG on stderr), shell completion;
- `--json` prints one JSON document on stdout; progress stays on stderr.

Heavy imports (torch, executorch, pandas) happen inside command bodies only, so
`etfarm --help`, `etfarm devices` and friends start fast.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from orchestrator.errors import EXIT_DEVICE_FAILED, EXIT_INTERRUPTED, EtfarmError, one_line

__all__ = ["app", "main"]

PROG = "etfarm"

HELP = """Profile ExecuTorch models op by op on a farm of devices.

Exit codes: 0 ok, 1 a device failed (or an internal error), 2 usage, config or data error, 130 Ctrl-C.

Environment:

ETFARM_CONFIG: device inventory (default ~/.config/etfarm/devices.yaml when present).

ETFARM_CACHE_DIR: exports, runner builds, runtimes (default ~/.cache/etfarm).

ETFARM_STORE: results database (default ~/.local/share/etfarm/results.db).

ETFARM_SCHEDULER: Dask scheduler address for run (default: this host only).
"""

app = typer.Typer(
    name=PROG,
    help=HELP,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from orchestrator.versions import version_line

        typer.echo(version_line())
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print etfarm's, ExecuTorch's and torch's versions and exit.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log device commands and other details on stderr.")] = False,
) -> None:
    if verbose:
        from orchestrator.cli.logs import log_to_stderr

        log_to_stderr()


def _register_commands() -> None:
    # Each module adds its commands to `app`; module imports must stay light.
    from orchestrator.cli import (
        analyze,
        build,
        compare,
        devices,
        export,
        farm,
        history,
        nightly,
        numerics,
        report,
        run,
        store,
        trace,
        worker,
    )

    for module in (run, export, build, analyze, trace, report, devices, history, store, compare, nightly, numerics, worker,
                   farm):
        module.register(app)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: one `error:` line per failure and the exit codes of the README."""
    _register_commands()
    try:
        result = app(args=argv, prog_name=PROG, standalone_mode=False)
    except EtfarmError as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:  # typer turns Ctrl-C inside a command into exit 130; this is Ctrl-C outside one
        result = EXIT_INTERRUPTED
    except Exception as exc:
        if _is_usage_error(exc):
            return _report_usage_error(exc)
        from orchestrator.cli.logs import record_crash

        details = record_crash(exc)
        print(f"error: internal error (bug): {type(exc).__name__}: {one_line(str(exc))}; details in {details}", file=sys.stderr)
        return EXIT_DEVICE_FAILED
    if result == EXIT_INTERRUPTED:
        print("interrupted: results collected so far are kept in the run directory", file=sys.stderr)
    return result if isinstance(result, int) else 0


def _is_usage_error(exc: Exception) -> bool:
    # typer vendors click; its exceptions all carry these two attributes.
    return hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int)


def _report_usage_error(exc: Exception) -> int:
    if type(exc).__name__ == "NoArgsIsHelpError":
        return 0  # click has already printed the help, once
    ctx = getattr(exc, "ctx", None)
    hint = f"; see '{ctx.command_path} --help'" if ctx is not None else ""
    print(f"error: {one_line(exc.format_message()).rstrip('.')}{hint}", file=sys.stderr)  # type: ignore[attr-defined]
    return int(exc.exit_code)  # type: ignore[attr-defined]
