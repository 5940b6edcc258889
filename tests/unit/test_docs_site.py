"""The documentation site (mkdocs.yml, docs/): it builds with `mkdocs build --strict` (a broken link or anchor is
a red test), its CLI reference is what `--help` prints, and its code layout names every module with its purpose."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / "docs" / "hooks"


def hook_module(name: str) -> ModuleType:
    """A module of docs/hooks/ (mkdocs loads them by path; so do the tests)."""
    spec = importlib.util.spec_from_file_location(f"docs_hooks_{name}", HOOKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_builds_strict_offline(tmp_path: Path) -> None:
    """What `make docs` runs, into a temporary site; no network (the theme's fonts are off)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "no_proxy": "*", "http_proxy": "http://127.0.0.1:9",
           "https_proxy": "http://127.0.0.1:9"}
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert built.returncode == 0, built.stderr[-3000:]
    assert "WARNING" not in built.stderr, built.stderr[-3000:]
    site = tmp_path / "site"
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "make demo" in home and "make test" in home  # the README is the home page
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "etfarm run" in cli and "--iterations" in cli and "etfarm history show" in cli
    layout = (site / "explanation" / "layout" / "index.html").read_text(encoding="utf-8")
    assert "process_run.py" in layout and "The device workflow" in layout  # a module's line, a package docstring


def test_the_readme_is_a_front_page_that_keeps_its_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 400
    assert "make demo" in readme and "make test" in readme and "## A tour of the CLI" in readme


def test_the_layout_names_every_module_under_its_package_with_its_purpose() -> None:
    layout = hook_module("code_layout")
    page = layout.markdown(ROOT)
    sections = dict(re.findall(r"^## `([\w.]+)`\n(.*?)(?=^## |\Z)", page, flags=re.M | re.S))
    packages = {p.parent for top in ("orchestrator", "device_agents") for p in (ROOT / top).rglob("__init__.py")}
    for package in packages:
        dotted = ".".join(package.relative_to(ROOT).parts)
        assert dotted in sections, f"{dotted}: no section on the layout page"
        assert layout.summary(package / "__init__.py"), f"{dotted}: the package has no docstring"
        rows = dict(re.findall(r"^\| `(\w+\.py)` \| (.*) \|$", sections[dotted], flags=re.M))
        modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
        assert set(rows) == modules, f"{dotted}: modules the layout does not name"
        assert [name for name, text in rows.items() if not text.strip()] == [], f"{dotted}: modules without a docstring"


def test_the_cli_reference_lists_every_option_help_prints() -> None:
    """Every option `etfarm ... --help` shows (its help callback prints `ctx.get_help()`) is on the site."""
    reference = hook_module("cli_reference")
    page = reference.markdown()
    found = reference.commands()
    assert {"etfarm run", "etfarm history show", "etfarm devices trust", "etfarm farm status"} <= {p for p, _, _ in found}
    for path, _, ctx in found:
        helped = set(re.findall(r"(?<![\w-])--[a-z][\w-]+", ctx.get_help()))
        start = page.index(f"`{path}`\n")
        end = page.find("\n## ", start + 1)
        shown = set(re.findall(r"(?<![\w-])--[a-z][\w-]+", page[start:end if end > 0 else None]))
        assert helped <= shown, f"{path}: --help shows options the site does not: {sorted(helped - shown)}"


def test_the_nightly_plan_reference_names_every_key_and_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The example plan on reference/nightly-plan.md sets every key a plan may have, and the plan reader takes it."""
    from orchestrator.app.nightly_plan import _KEYS, load_plan

    page = (ROOT / "docs" / "reference" / "nightly-plan.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```yaml\n(.*?)```", page, flags=re.S)
    assert set(re.findall(r"^(\w+):", example, flags=re.M)) == _KEYS
    (tmp_path / "plan.yaml").write_text(example, encoding="utf-8")
    monkeypatch.chdir(ROOT)  # relative paths are the working directory's, as on the command line
    plan = load_plan(tmp_path / "plan.yaml")
    assert plan.op_threshold == 0.10 and plan.publish is not None and len(plan.models) == 2
