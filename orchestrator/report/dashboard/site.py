"""`etfarm publish --out DIR`: the store as a static site, written incrementally and atomically.

DIR/index.html (every series), nights.html, regressions.html, series/<slug>.html (a page per series), assets/
(plotly.js, the style sheet, the series script: shared, written once), data/runs/<run id>.json (each stored run
as read, so the next publish reads from the store only the runs that are new or changed) and manifest.json (what
was written from which store state: each run's token, each series page's fingerprint).

Incremental: the indexes are rewritten every time; a series page only when a run of the series is new or
changed (or its page is missing). Atomic: the whole store is read before anything is written, and every file
is written to a temporary sibling and renamed, so a store that cannot be read leaves DIR as it was, and a reader
never sees a torn page.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.cache import cannot_write_in, write_bytes_atomic
from orchestrator.errors import DataError, UsageError
from orchestrator.store import open_store, store_path

from . import assets
from .collect import entry_from_json, entry_json, read_runs
from .model import RunEntry, Series
from .pages import INDEX, NIGHTS, REGRESSIONS, index_page, nights_page, regressions_page
from .series import build_series, nights, regressions
from .series_page import series_page

MANIFEST = "manifest.json"
RUNS_DATA = "data/runs"
FORMAT = 1  # of the manifest and the kept runs: another is read as nothing kept (everything read again)


@dataclass(frozen=True)
class Published:
    out: Path
    series: int
    runs: int
    read: int  # runs read from the store now (the others were kept from the last publish)
    written: tuple[str, ...]  # files written, relative to `out`

    def describe(self) -> str:
        pages = sum(1 for w in self.written if w.endswith(".html"))
        return (f"published {self.series} series from {self.runs} stored runs ({self.read} read now) to "
                f"{self.out / INDEX}: {pages} pages written")


def publish(out: Path, store: Path | None = None) -> Published:
    out = Path(out).expanduser()
    _check_out(out)
    manifest = _manifest(out)
    kept = _kept(out, manifest)
    where = store_path(store)
    entries, fresh = _read_store(where, kept)
    series = build_series(entries)
    files = _pages(out, series, entries, str(where), manifest, fresh)
    files.update({f"{RUNS_DATA}/{e.run_id}.json": json.dumps(entry_json(e)).encode() for e in entries
                  if e.run_id in fresh})
    if manifest.get("plotly") != _plotly_version() or not (out / assets.PLOTLY).is_file():
        files[assets.PLOTLY] = assets.plotly_js()
    files[assets.STYLE], files[assets.SERIES_SCRIPT] = assets.CSS.encode(), assets.SERIES_JS.encode()
    for name, data in files.items():
        _write(out, name, data)
    for gone in set(manifest.get("runs", {})) - {e.run_id for e in entries}:
        (out / RUNS_DATA / f"{gone}.json").unlink(missing_ok=True)
    _write(out, MANIFEST, json.dumps({
        "format": FORMAT, "store": str(where), "published": datetime.now(UTC).isoformat(timespec="seconds"),
        "plotly": _plotly_version(), "runs": {e.run_id: e.token for e in entries},
        "series": {s.slug: _fingerprint(s) for s in series}, "written": sorted(files)}, indent=1).encode())
    return Published(out, len(series), len(entries), len(fresh), tuple(sorted(files)))


def _check_out(out: Path) -> None:
    """DIR is a directory we can write in (made if missing): one line naming it otherwise (exit 2)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot create it ({exc.strerror or exc})") from None
    if not out.is_dir():
        raise UsageError(f"--out {out}: not a directory")
    refusal = cannot_write_in(out)
    if refusal is not None:
        raise UsageError(f"--out {out}: cannot write in it ({refusal})")


def _read_store(where: Path, kept: Mapping[str, RunEntry]) -> tuple[list[RunEntry], set[str]]:
    """Every stored run (none when there is no store yet: reading never creates one); a store that cannot be read
    is one line naming it."""
    if not where.exists():
        return [], set()
    try:
        with open_store(where) as opened:
            return read_runs(opened, kept)
    except (sqlite3.Error, DataError, OSError) as exc:
        raise UsageError(f"the results store {where}: cannot read it ({str(exc).removeprefix(f'{where}: ')})") from None


def _pages(out: Path, series: list[Series], entries: list[RunEntry], store: str, manifest: Mapping[str, object],
           fresh: set[str]) -> dict[str, bytes]:
    """The indexes, and the page of every series that is new, changed or missing."""
    files = {INDEX: index_page(series, store, len(entries)).encode(),
             NIGHTS: nights_page(nights(entries), str(out)).encode(),
             REGRESSIONS: regressions_page(regressions(series), str(out)).encode()}
    known = manifest.get("series") if isinstance(manifest.get("series"), dict) else {}
    series_dir = str(out / "series")
    for s in series:
        name = f"series/{s.slug}.html"
        touched = any(p.row.run_id in fresh for p in s.points)
        if touched or known.get(s.slug) != _fingerprint(s) or not (out / name).is_file():  # type: ignore[union-attr]
            files[name] = series_page(s, series_dir).encode()
    return files


def _fingerprint(series: Series) -> str:
    """What a series page was written from: its points' runs (their tokens change when a run is re-read)."""
    return hashlib.sha256("\n".join(f"{p.row.run_id}" for p in series.points).encode()).hexdigest()[:16]


def _manifest(out: Path) -> dict[str, object]:
    try:
        data = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("format") == FORMAT else {}


def _kept(out: Path, manifest: Mapping[str, object]) -> dict[str, RunEntry]:
    """The runs the last publish read, as it kept them; one that cannot be read back is read from the store again."""
    runs = manifest.get("runs") if isinstance(manifest.get("runs"), dict) else {}
    kept = {}
    for run_id in runs:  # type: ignore[union-attr]
        try:
            kept[run_id] = entry_from_json(json.loads((out / RUNS_DATA / f"{run_id}.json").read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            continue
    return kept


def _write(out: Path, name: str, data: bytes) -> None:
    try:
        write_bytes_atomic(out / name, data)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write {name} ({exc.strerror or exc})") from None


def _plotly_version() -> str:
    from importlib.metadata import version

    return version("plotly")
