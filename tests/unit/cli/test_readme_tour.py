"""The README's tour runs as written: every `etfarm` line of its command blocks parses against the CLI as it is
(each command and sub-command exists, each option is known, arguments fit), so renaming an option or a command
without the front page fails here. Nothing is run: the command tree parses each line (`make_context`)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from orchestrator import cli

README = Path(__file__).resolve().parents[3] / "README.md"


def tour_lines() -> list[list[str]]:
    """The arguments of each `etfarm` line of the tour's command blocks (comments, `\\` joins and a redirection
    as the shell reads them; the tour separates `>` by spaces)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## A tour of the CLI")
    tour = text[start:text.find("\n## ", start + 1)]
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", tour, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            words = words[:next((i for i, w in enumerate(words) if w in (">", "|", "&&", ";", "&")), len(words))]
            if words and words[0] == "etfarm":
                lines.append(words[1:])
    return lines


def parse(root: Any, args: list[str]) -> None:
    """Parse `etfarm ARGS` down to its last sub-command, as the program would, without running it."""
    command, ctx = root, root.make_context(cli.PROG, list(args))
    while hasattr(command, "resolve_command"):
        rest = [*(getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", None) or []), *ctx.args]
        if not rest:
            return
        name, command, rest = command.resolve_command(ctx, rest)
        ctx = command.make_context(name, rest, parent=ctx)


@pytest.fixture(scope="module")
def root() -> Any:
    cli._register_commands()
    return typer.main.get_command(cli.app)


def test_every_line_of_the_tour_parses(root: Any, capsys: pytest.CaptureFixture[str]) -> None:
    lines = tour_lines()
    assert len(lines) >= 25 and ["history", "--changes"] in lines
    for args in lines:
        try:
            parse(root, args)
        except Exception as exc:  # typer vendors click: its exceptions are told apart by their exit code
            assert getattr(exc, "exit_code", None) == 0, f"etfarm {' '.join(args)}: {exc}"  # --version exits 0
    capsys.readouterr()


@pytest.mark.parametrize("args", [["run", "--no-such-option"], ["no-such-command"], ["devices", "check"],
                                  ["run", "--runs", "zero"]])
def test_a_line_that_would_not_run_does_not_parse(root: Any, args: list[str]) -> None:
    with pytest.raises(Exception) as raised:
        parse(root, args)
    assert getattr(raised.value, "exit_code", None) == 2
