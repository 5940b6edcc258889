"""mkdocs hooks: the pages the site generates from the code at build time, so the site cannot disagree with it.

- `index.md` is README.md itself (the front page), its links into docs/ made relative to the site;
- `reference/cli.md` gets every command's usage, help and options from the typer app's click tree: the same
  objects `--help` prints (cli_reference.py);
- `explanation/layout.md` gets every package's docstring (mkdocstrings) and each module's first paragraph
  (code_layout.py);
- the nav's "Guides" section lists every docs/guide/*.md that exists (guide/index.md first).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # mkdocs loads a hook by path, not as a package

import cli_reference  # noqa: E402
import code_layout  # noqa: E402

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
GENERATED = "<!-- generated at build time: docs/hooks/etfarm_docs.py -->"


def on_config(config: Any) -> Any:
    """The Guides section: guide/index.md, then every other guide page, by name."""
    guides = sorted(p.relative_to(DOCS).as_posix() for p in (DOCS / "guide").glob("*.md") if p.name != "index.md")
    for item in config.nav or []:
        if isinstance(item, dict) and "Guides" in item:
            item["Guides"] = ["guide/index.md", *guides]
    return config


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    src = page.file.src_uri
    if src == "index.md":
        return readme_as_home((ROOT / "README.md").read_text(encoding="utf-8"))
    if src == "reference/cli.md":
        return markdown.replace(GENERATED, cli_reference.markdown())
    if src == "explanation/layout.md":
        return markdown.replace(GENERATED, code_layout.markdown(ROOT))
    return markdown


def readme_as_home(text: str) -> str:
    """README.md as the site's home page: its links into docs/ are relative to the site's root there."""
    return text.replace("](docs/", "](")
