"""The CLI reference, from the typer app's click command tree: each command's usage, help and options are the
objects `etfarm COMMAND --help` prints, so the site and `--help` cannot disagree. Typer vendors its own click,
so the tree is read by duck typing (`list_commands`, `context_class`, `param_type_name`), never against
`click`'s classes."""

from __future__ import annotations

import inspect
import re
from typing import Any

import typer

SPECIAL = re.compile(r"([\\*_\[\]])")  # what Markdown reads as markup; <, > and & become entities
ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def commands() -> list[tuple[str, Any, Any]]:
    """(`etfarm ...` path, command, its context) of every visible command, depth first, in registration order."""
    from orchestrator import cli

    cli._register_commands()  # what main() does before parsing: each module adds its commands
    root = typer.main.get_command(cli.app)
    found: list[tuple[str, Any, Any]] = []

    def walk(command: Any, ctx: Any, path: str) -> None:
        found.append((path, command, ctx))
        for name in command.list_commands(ctx) if hasattr(command, "list_commands") else ():
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                walk(sub, sub.context_class(sub, info_name=name, parent=ctx), f"{path} {name}")

    walk(root, root.context_class(root, info_name=cli.PROG), cli.PROG)
    return found


def text(value: str) -> str:
    """Help text as Markdown shows it verbatim: code spans kept, what Markdown would read as markup escaped."""
    parts = re.split(r"(`[^`]*`)", value)
    return "".join(p if p.startswith("`") else _plain(p) for p in parts)


def _plain(value: str) -> str:
    value = "".join(ENTITIES.get(c, c) for c in value)
    return SPECIAL.sub(r"\\\1", value)


def section(path: str, command: Any, ctx: Any) -> str:
    depth = path.count(" ")
    lines = [f"{'#' * min(depth + 2, 4)} `{path}`", ""]
    if command.help:
        lines += [text(inspect.cleandoc(command.help.split("\f")[0])), ""]
    lines += ["```text", command.get_usage(ctx), "```", ""]
    params = command.get_params(ctx)  # arguments first, as the usage line names them
    for param in sorted(params, key=lambda p: p.param_type_name != "argument"):
        record = param.get_help_record(ctx)
        if record is None and param.param_type_name == "argument":
            record = (str(param.name).upper(), "")
        if record is not None:
            names, help_text = record
            lines.append(f"- `{names}`" + (f": {text(help_text)}" if help_text else ""))
    return "\n".join(lines).rstrip() + "\n"


def markdown() -> str:
    """The whole reference: `etfarm` first, then each command and its sub-commands."""
    return "\n".join(section(path, command, ctx) for path, command, ctx in commands())
