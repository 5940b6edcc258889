"""Where a report may go: its formats and file names, and the checks of a target, before any report is built.

`--output` may name a file, or a directory (existing, or ending in '/'), which then gets
`report.<ext>` and, for Markdown, the charts as `charts/<stem>.svg` beside it. A report never
writes over a run's own files (`guard_output`): inside a run directory it may only write its own
report files (`report.*`, `report-vs-*`, `charts/`). Files are written atomically (temp file +
rename), so a reader never sees half a report. Light on purpose: the command line names these
formats and checks these targets for every command (output.py builds and writes the reports).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

from orchestrator.base.cache import write_text_atomic
from orchestrator.base.errors import UsageError

REPORT_HTML = "report.html"
AB_PREFIX = "report-vs-"  # `report B --against A` writes B/report-vs-<A's run id>.<ext>
AB_PAGE = "report-ab.html"  # `run --ab` writes its A/B page (B's model against A's) into its run directory


class ReportFormat(StrEnum):
    HTML = "html"
    MD = "md"
    JSON = "json"
    CSV = "csv"
    BMF = "bmf"  # Bencher Metric Format
    GITHUB_BENCHMARK = "github-benchmark"  # github-action-benchmark's customSmallerIsBetter list
    HUD = "hud"  # the PyTorch OSS benchmark database's v3 records

    @property
    def file_name(self) -> str:
        """The report's file name in a directory: `report.html`, ...; the CI formats are JSON (`report.bmf.json`)."""
        return f"report.{self.value}" if self in _OWN_EXTENSION else f"report.{self.value}.json"


_OWN_EXTENSION = frozenset({ReportFormat.HTML, ReportFormat.MD, ReportFormat.JSON, ReportFormat.CSV})
REPORT_FILES = frozenset(f.file_name for f in ReportFormat) | {AB_PAGE}


def check_target(target: Path, option: str = "--output") -> None:
    """Refuse, before the work that fills it, a report file whose folder cannot take it: a folder that does not
    exist, is a file, or is not ours to write in (read-only). One line naming `option`, the flag that named
    the file, and what is wrong."""
    folder = target.parent
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        raise UsageError(f"{option} {target}: {existing} is a file, not a directory")
    if existing != folder:
        raise UsageError(f"{option} {target}: directory {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {target}: cannot write in {folder} (read-only, or not ours)")


def guard_output(target: Path, run_dirs: Sequence[Path], option: str = "--output") -> None:
    """Refuse a target that would write over a run's own files (its manifest, stats.csv, ETDumps, ...): inside
    a run directory only the report's own files (report.*, charts/) may be written."""
    resolved = target.resolve()
    for run_dir in run_dirs:
        root = run_dir.resolve()
        if resolved == root or root not in resolved.parents:
            continue
        inside = resolved.relative_to(root)
        if len(inside.parts) == 1 and (inside.name in REPORT_FILES or inside.name.startswith(AB_PREFIX)):
            continue
        if len(inside.parts) == 2 and inside.parts[0] == "charts":
            continue
        raise UsageError(f"{option}: {target} is inside run directory {run_dir}, and a report never writes over a "
                         f"run's own files; write elsewhere, or to {root / 'report.<ext>'}")


def is_dir_target(output: str | Path) -> bool:
    return Path(output).is_dir() or str(output).endswith(("/", "\\"))


def target_file(output: Path, fmt: ReportFormat, as_dir: bool) -> Path:
    if as_dir:
        output.mkdir(parents=True, exist_ok=True)
        return output / fmt.file_name
    check_target(output)
    return output


def write_text(path: Path, text: str, option: str = "--output") -> None:
    try:
        write_text_atomic(path, text)  # temp file, fsync, rename: a crash never leaves a torn report
    except OSError as exc:
        raise UsageError(f"{option}: cannot write {path}: {exc.strerror or exc}") from None
