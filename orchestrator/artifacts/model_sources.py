"""The files a model's export depends on: its model file and the local modules it imports.

Exports are cached by content hash, so editing `common.py` beside `model.py` must change the
key. Imports are found statically (`ast`, no import, no torch): `import common`, `from common
import x`, `from . import y`, `from pkg.sub import z` resolve against the model file's folder
(which etfarm puts on sys.path when it loads the model); anything not found there (torch,
numpy, installed packages) is the environment's, already covered by the version part of the key.
"""

from __future__ import annotations

import ast
from pathlib import Path

MAX_LOCAL_SOURCES = 500  # a model file importing more local modules than this is a tree, not a model


def local_sources(model_file: Path) -> list[Path]:
    """`model_file` and every local module it imports, transitively, in a stable order."""
    root = model_file.resolve().parent
    seen: dict[Path, None] = {}
    todo = [model_file.resolve()]
    while todo and len(seen) < MAX_LOCAL_SOURCES:
        path = todo.pop()
        if path in seen:
            continue
        seen[path] = None
        todo.extend(p for p in _imported_files(path, root) if p not in seen)
    return sorted(seen)


def _imported_files(path: Path, root: Path) -> list[Path]:
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return []  # the export itself will report a broken file
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = path.parent if node.level else root
            for _ in range(max(node.level - 1, 0)):
                base = base.parent
            module = node.module or ""
            names = [f"{module}.{alias.name}" if module else alias.name for alias in node.names] + ([module] if module else [])
            found += [f for name in names for f in _resolve(base, name)]
            continue
        else:
            continue
        found += [f for name in names for f in _resolve(root, name)]
    return found


def _resolve(base: Path, dotted: str) -> list[Path]:
    """The files importing `dotted` from `base` runs: each package's __init__, then the module."""
    parts = dotted.split(".")
    files = [init for i in range(1, len(parts)) if (init := base.joinpath(*parts[:i], "__init__.py")).is_file()]
    candidate = base.joinpath(*parts)
    module = next((p for p in (candidate.with_suffix(".py"), candidate / "__init__.py") if p.is_file()), None)
    return [p.resolve() for p in files + ([module] if module else [])]
