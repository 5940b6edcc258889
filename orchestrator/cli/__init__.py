"""`etfarm` command line. Thin: each command module parses options and calls a stage.

Conventions every command keeps (docs/reference/conventions.md):
- errors print as exactly one `error:` line on stderr (multi-line messages are folded by
  `errors.one_line`), exit 0 ok / 1 a device failed / 2 usage, config or data error (and the host's own files: a
  read-only directory, a full disk, a file where a directory should be) / 130 Ctrl-C or SIGTERM;
  an unexpected exception prints one `error: internal error (bug): ...` line and exits 1, the
  traceback going to a file under the cache;
- `-h`/`--help`, `--version`, `-v/--verbose` (device commands at DEBUG on stderr), shell completion;
- `--json` prints one JSON document on stdout; progress stays on stderr.

Heavy imports (torch, executorch, pandas) happen inside command bodies only, so
`etfarm --help`, `etfarm devices` and friends start fast.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Annotated, NoReturn

import typer

from orchestrator.base.collector import collect_less_often
from orchestrator.base.errors import (
    EXIT_DEVICE_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    EtfarmError,
    environment_problem,
    one_line,
)
from orchestrator.base.versions import version_line
from orchestrator.cli import (
    analyze,
    bisect,
    build,
    compare,
    devices,
    export,
    farm,
    history,
    nightly,
    numerics,
    publish,
    report,
    run,
    store,
    trace,
    worker,
)
from orchestrator.cli.help_fold import fold_option_help
from orchestrator.cli.logs import log_to_stderr, record_crash

__all__ = ["app", "main", "program"]

PROG = "etfarm"

HELP = """Profile ExecuTorch models op by op on a farm of devices.

Exit codes: 0 ok, 1 a device failed (or an internal error), 2 usage, config or data error, 130 Ctrl-C or SIGTERM.

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
        typer.echo(version_line())
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print etfarm's, ExecuTorch's and torch's versions and exit.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log device commands and other details on stderr.")] = False,
) -> None:
    if verbose:
        log_to_stderr()


def _register_commands() -> None:
    # Each module adds its commands to `app`; module imports must stay light.

    for module in (run, export, build, analyze, trace, report, devices, history, store, compare, nightly, publish, numerics,
                   worker, farm, bisect):
        module.register(app)
    fold_option_help()  # --help never cuts a word with `…` (help_fold.py)


def main(argv: list[str] | None = None, *, ending_program: bool = False) -> int:
    """Run one command: one `error:` line per failure and the exit codes of docs/reference/conventions.md.

    `ending_program`: the process exits when this returns (the `etfarm` program, `program()`), so after an
    interrupt the signal handlers are not handed back: see `interrupts`."""
    _register_commands()
    with interrupts(ending_program=ending_program) as received:
        result = _run(argv)
    if result == EXIT_INTERRUPTED:
        how = received[0] if received else "KeyboardInterrupt, no signal"  # raised by a model's own code, say
        print(f"interrupted ({how}): what finished is kept", file=sys.stderr)
    return result


def program() -> NoReturn:
    """The `etfarm` program (console script and `python -m orchestrator.cli`): `main`, then exit with its code."""
    collect_less_often()  # a process-wide choice, so made here rather than in `main` (which tests call in-process)
    sys.exit(main(ending_program=True))


def _run(argv: list[str] | None) -> int:
    try:
        result = app(args=argv, prog_name=PROG, standalone_mode=False)
    except EtfarmError as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:  # typer turns Ctrl-C inside a command into exit 130; this is Ctrl-C outside one
        return EXIT_INTERRUPTED
    except Exception as exc:
        if _is_usage_error(exc):
            return _report_usage_error(exc)
        problem = environment_problem(exc)
        if problem is not None:  # the host's files or disk, not etfarm: one line naming the path
            print(f"error: {one_line(problem)}", file=sys.stderr)
            return EXIT_USAGE

        details = record_crash(exc)
        print(f"error: internal error (bug): {type(exc).__name__}: {one_line(str(exc))}; {details}", file=sys.stderr)
        return EXIT_DEVICE_FAILED
    return result if isinstance(result, int) else 0


# Signals that end a command as Ctrl-C does; SIGHUP is the terminal going away (an ssh session dropped).
_SIGNAL_NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
# After the first of them, the job stops its runners and records what finished (docs/reference/faults.md, "Faults: the job":
# at most 15 s of waiting for the devices); another signal within this long does not cut that short.
STOPPING_GRACE_S = 30.0


@contextlib.contextmanager
def interrupts(*, ending_program: bool = False) -> Iterator[list[str]]:
    """SIGTERM and SIGHUP end any command as Ctrl-C does (KeyboardInterrupt: what finished is kept, exit
    130), from its first line on (an export, a build, a report), not only while devices run; a signal
    ignored when etfarm started (nohup, a background job) stays ignored. Signals after the first, for
    STOPPING_GRACE_S, only say that etfarm is stopping: the stop (runners killed, manifest `interrupted`)
    is not cut short. Yields the names of the signals received, for the one line that says so.

    `ending_program`: when a stop is under way as the block ends, the process is about to exit; handing
    the previous handlers back would let a second Ctrl-C in its last lines (the final message, interpreter
    shutdown) kill it by the signal or print a traceback instead of exit 130. So those signals are ignored
    from there on. (Python resets its own handlers to the default at shutdown, so ignoring is the one way
    that holds to the end.) Without it, as for in-process callers, the previous handlers always return."""
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    first: list[float] = []

    def handler(signum: int, frame: object) -> None:
        received.append(_SIGNAL_NAMES[signum])
        if first and time.monotonic() - first[0] < STOPPING_GRACE_S:  # a second Ctrl-C must not cut the stop short
            print(f"{received[-1]}: already stopping, recording what finished", file=sys.stderr, flush=True)
            return
        first[:] = [time.monotonic()]
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {sig: signal.getsignal(sig) for sig in _SIGNAL_NAMES}
    for sig, before in previous.items():
        if before is not signal.SIG_IGN:  # nohup and background jobs ignore SIGINT on purpose: keep it so
            signal.signal(sig, handler)
    try:
        yield received
    finally:
        stopping = ending_program and bool(first)
        for sig, before in previous.items():
            signal.signal(sig, signal.SIG_IGN if stopping else before)


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
