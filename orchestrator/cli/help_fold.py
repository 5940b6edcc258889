"""`--help` never cuts a word: an option's help folds a word longer than its column onto the next line.

typer draws each option's help in a rich table column, whose words longer than the column (a path such as
`~/.config/etfarm/devices.yaml`, `package.module:factory`) rich cuts with `…` by default: at 80 columns the
help column of `etfarm run --help` is about 20 characters wide. A rich Text's own `overflow="fold"` goes
before the column's, so the help's texts are made to fold. typer builds an option's help in
`rich_utils._get_parameter_help`, imported only when help is drawn (171 ms of rich modules no other command
pays), so the fold is put in place then, by the help commands themselves.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer.core

_INSTALLED = "_etfarm_folds"


def fold_option_help() -> None:
    """Make every typer command's help fold long words in option help (idempotent)."""
    for cls in (typer.core.TyperCommand, typer.core.TyperGroup):
        if not getattr(cls.format_help, _INSTALLED, False):
            cls.format_help = _folding_first(cls.format_help)  # type: ignore[method-assign]


def _folding_first(format_help: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(format_help)
    def wrapped(self: Any, ctx: Any, formatter: Any) -> None:
        _fold_parameter_help()
        format_help(self, ctx, formatter)

    setattr(wrapped, _INSTALLED, True)
    return wrapped


def _fold_parameter_help() -> None:
    from typer import rich_utils

    original = getattr(rich_utils, "_get_parameter_help", None)
    if original is None or getattr(original, _INSTALLED, False):
        return  # another typer: the help is drawn as that typer draws it (the test says so)

    @functools.wraps(original)
    def folded(*args: Any, **kwargs: Any) -> Any:
        from rich.text import Text

        help_ = original(*args, **kwargs)
        for item in getattr(help_, "renderables", [help_]):  # a rich Columns of Texts (help, env var, default)
            if isinstance(item, Text):
                item.overflow = "fold"
        return help_

    setattr(folded, _INSTALLED, True)
    rich_utils._get_parameter_help = folded
