"""Where a site may be published: a folder that is missing or empty, or a site this store published before.

`publish` writes manifest.json, index.html and folders into DIR and replaces what it finds there: into a run
directory it would overwrite the run's manifest, into `/` or a home folder it would scatter a site among the user's
files. So DIR must be new, empty, or hold a site whose own manifest.json says this store published it; anything
else is refused in one line before the store is read (and, for a plan's `publish:`, before the night runs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SITE_MANIFEST = "manifest.json"


def site_manifest(out: Path) -> dict[str, Any]:
    """DIR/manifest.json as the last publish wrote it ({} when missing, unreadable, or not a site's)."""
    try:
        data = json.loads((out / SITE_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) and isinstance(data.get("store"), str) and "series" in data else {}


def refusal(out: Path, store: Path) -> str | None:
    """Why `store` may not be published into `out` (None: it may)."""
    if not out.exists():
        return None
    if not out.is_dir():
        return "not a directory"
    try:
        empty = next(out.iterdir(), None) is None
    except OSError as exc:
        return f"cannot list it ({exc.strerror or exc})"
    if empty:
        return None
    owner = site_manifest(out).get("store")
    if owner in (str(store), str(store.resolve())):
        return None
    if owner is not None:
        return f"it is the site of another results store ({owner}); publish into a new or empty folder"
    if (out / SITE_MANIFEST).is_file():
        return ("it holds a manifest.json that no etfarm site wrote (a run directory?); a site is published only "
                "into a new or empty folder, or over a site of this store")
    return ("it is not empty and holds no site of this store; a site is published only into a new or empty folder, "
            "or over a site of this store")
