"""README "Layout" names every module of the tree under its package, and no module the tree does not hold."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.readme import README

ROOT = README.parent
ENTRY = re.compile(r"^(?:orchestrator/ {4}| {17})(\w+)/ {2,}")  # `orchestrator/    cli/  ...`, `   app/  ...`
TOP = re.compile(r"^(\w+)/ {2,}")  # `device_agents/   ...`, `runners/   ...`
GROUND = re.compile(r"^ {17}\w+\.py")  # the orchestrator's own modules, after its sub-packages


def layout_entries() -> dict[str, str]:
    """The Layout block's text per package directory ("orchestrator/run", "device_agents", "orchestrator": ground)."""
    text = README.read_text(encoding="utf-8")
    block = text[text.index("## Layout"):]
    block = block[block.index("```\n") + 4:]
    block = block[:block.index("```")]
    entries: dict[str, str] = {}
    current = ""
    for line in block.splitlines():
        if match := ENTRY.match(line):
            current = f"orchestrator/{match.group(1)}"
        elif GROUND.match(line) and current.startswith("orchestrator/"):
            current = "orchestrator"
        elif match := TOP.match(line):
            current = match.group(1)
        entries[current] = entries.get(current, "") + " " + line
    return entries


def modules(directory: Path, deep: bool) -> set[str]:
    """File names of the modules under `directory` (and the names of its sub-packages, `name/`), `__init__` aside."""
    files = directory.rglob("*.py") if deep else directory.glob("*.py")
    names = {p.name for p in files if p.name != "__init__.py"}
    if deep:
        names |= {f"{p.name}/" for p in directory.rglob("*") if p.is_dir() and (p / "__init__.py").is_file()}
    return names


def test_the_layout_names_every_module_under_its_package() -> None:
    entries = layout_entries()
    packages = [p for p in (ROOT / "orchestrator").iterdir() if (p / "__init__.py").is_file()]
    assert {f"orchestrator/{p.name}" for p in packages} <= set(entries), "a package has no Layout entry"
    for where, deep in [*((f"orchestrator/{p.name}", True) for p in packages), ("orchestrator", False),
                        ("device_agents", True)]:
        tree = modules(ROOT / where, deep)
        named = set(re.findall(r"\b\w+\.py\b|\b\w+/", entries[where]))
        assert tree - named == set(), f"{where}: modules the README's Layout does not name"
        gone = {n for n in named if n.endswith(".py") and n != "__init__.py"} - tree
        assert gone == set(), f"{where}: the Layout names modules that are gone"
