"""The code layout, from the code: each package's docstring (rendered by mkdocstrings) and a table of its
modules with the first paragraph of each module's docstring, read with `ast` (nothing is imported)."""

from __future__ import annotations

import ast
from pathlib import Path

TOP = ("orchestrator", "device_agents")


def packages(root: Path) -> list[Path]:
    """Every package directory under the top packages (an `__init__.py` in it), parents before children."""
    found = [root / top for top in TOP]
    for top in TOP:
        found += sorted(p.parent for p in (root / top).rglob("*/__init__.py"))
    return sorted(set(found), key=lambda p: p.relative_to(root).parts)


def summary(path: Path) -> str:
    """The first paragraph of a module's docstring, on one line ("" when it has none)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def modules(package: Path) -> list[tuple[str, str]]:
    """(module file name, summary) of each module directly in `package`, `__init__` aside."""
    return [(p.name, summary(p)) for p in sorted(package.glob("*.py")) if p.name != "__init__.py"]


def cell(value: str) -> str:
    return value.replace("|", "\\|").replace("<", "&lt;")


def markdown(root: Path) -> str:
    parts = []
    for package in packages(root):
        dotted = ".".join(package.relative_to(root).parts)
        parts += [f"## `{dotted}`", "", f"::: {dotted}", ""]
        rows = modules(package)
        if rows:
            parts += ["| module | what it is |", "| --- | --- |"]
            parts += [f"| `{name}` | {cell(text)} |" for name, text in rows]
            parts.append("")
    return "\n".join(parts)
