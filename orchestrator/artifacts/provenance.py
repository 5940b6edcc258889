"""Where a model came from: the content hash of its source file and the user's git commit.

Recorded in the manifest at run time (ModelArtifacts.content_hash / git_commit), so history can
name the commit where a latency shift began. Computed when the job starts, not when a run is
imported later: by then the repository may have moved on. git is optional: a file outside a
repository, or a host without git, gives no commit, never an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.base.cache import sha256_file
from orchestrator.base.procs import run, which

GIT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Provenance:
    content_hash: str | None  # sha256 of the model's source file (.py or .pte)
    git_commit: str | None  # HEAD of the repository holding that file; "+dirty" when the file has local changes


def model_provenance(source: Path) -> Provenance:
    try:
        content_hash = sha256_file(source) if source.is_file() else None
    except OSError:
        content_hash = None
    return Provenance(content_hash, git_commit(source))


def git_commit(path: Path) -> str | None:
    """HEAD of the git repository containing `path` (suffixed `+dirty` when that file differs from HEAD)."""
    if which("git") is None:
        return None
    folder = path.parent if path.is_file() or not path.exists() else path
    if not folder.is_dir():
        return None
    try:
        head = run(["git", "-C", str(folder), "rev-parse", "--verify", "HEAD"], timeout_s=GIT_TIMEOUT_S)
        if not head.ok:
            return None
        commit = head.stdout.strip()
        status = run(["git", "-C", str(folder), "status", "--porcelain", "--", path.name], timeout_s=GIT_TIMEOUT_S)
    except OSError:
        return None
    dirty = status.ok and bool(status.stdout.strip())
    return f"{commit}+dirty" if dirty else commit
