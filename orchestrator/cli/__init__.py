"""`etfarm` command line. Thin: each command module parses options and calls a stage.

Heavy imports (torch, executorch, pandas) happen inside command bodies only, so
`etfarm --help`, `etfarm devices` and friends start fast.
"""

from __future__ import annotations

import sys

import typer

from orchestrator.errors import EtfarmError

app = typer.Typer(
    name="etfarm",
    help="Profile ExecuTorch models op by op on a farm of devices.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register_commands() -> None:
    # Each module adds its commands to `app`; module imports must stay light.
    from orchestrator.cli import (
        analyze,
        build,
        compare,
        devices,
        export,
        history,
        nightly,
        run,
        store,
        trace,
    )

    for module in (run, export, build, analyze, trace, devices, history, store, compare, nightly):
        module.register(app)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: one-line errors, exit 2 for usage and config problems."""
    _register_commands()
    try:
        result = app(args=argv, standalone_mode=False)
    except EtfarmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted: results collected so far are kept in the run directory", file=sys.stderr)
        return 130
    except Exception as exc:
        if _is_usage_error(exc):
            return _report_usage_error(exc)
        raise
    return result if isinstance(result, int) else 0


def _is_usage_error(exc: Exception) -> bool:
    # typer vendors click; its exceptions all carry these two attributes.
    return hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int)


def _report_usage_error(exc: Exception) -> int:
    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
        print(ctx.get_help())
        return 0
    if ctx is not None:
        print(ctx.get_usage(), file=sys.stderr)
    print(f"error: {exc.format_message()}", file=sys.stderr)  # type: ignore[attr-defined]
    return int(exc.exit_code)  # type: ignore[attr-defined]


