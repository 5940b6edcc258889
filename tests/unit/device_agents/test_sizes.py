"""device_agents/ stays in small parts (docs/architecture.md, "Style"): modules under 400 lines, classes under
250, functions under 80. A part that grows past its bound is split by job, not exempted."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "device_agents"
MODULE_MAX, CLASS_MAX, FUNCTION_MAX = 400, 250, 80


def test_modules_classes_and_functions_are_small() -> None:
    too_big: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text()
        where = path.relative_to(PACKAGE.parent)
        if len(source.splitlines()) >= MODULE_MAX:
            too_big.append(f"{where}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size >= (CLASS_MAX if isinstance(node, ast.ClassDef) else FUNCTION_MAX):
                    too_big.append(f"{where}:{node.lineno} {node.name}: {size} lines")
    assert too_big == [], "\n".join(too_big)
