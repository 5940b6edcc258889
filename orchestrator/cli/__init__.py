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
    from orchestrator.cli import analyze, build, devices, export, run, trace

    for module in (run, export, build, analyze, trace, devices):
        module.register(app)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: one-line errors, exit 2 for usage and config problems."""
    _register_commands()
    try:
        app(args=argv, standalone_mode=False)
    except EtfarmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        print("aborted", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except _click_usage_errors() as exc:
        exc.show()
        return 2
    return 0


def _click_usage_errors() -> tuple[type[BaseException], ...]:
    import click

    return (click.UsageError, click.BadParameter, click.exceptions.NoSuchOption)


if __name__ == "__main__":
    sys.exit(main())
