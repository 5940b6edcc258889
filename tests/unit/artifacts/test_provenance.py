"""Where a model came from: its file's sha256 and the git commit of the repository holding it."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from orchestrator.artifacts.provenance import git_commit, model_provenance


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def test_commit_of_a_model_file_in_a_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "models").mkdir(parents=True)
    model = repo / "models" / "net.py"
    model.write_text("def build(): ...\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "model")
    head = _git(repo, "rev-parse", "HEAD")
    origin = model_provenance(model)
    assert origin.git_commit == head
    assert origin.content_hash == hashlib.sha256(model.read_bytes()).hexdigest()
    model.write_text("def build(): return 2\n")
    assert git_commit(model) == f"{head}+dirty"  # the file differs from the commit


def test_no_repository_or_no_git_gives_no_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "net.py"
    model.write_text("x = 1\n")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # never find a repository above tmp
    assert git_commit(model) is None
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert model_provenance(model).git_commit is None
    assert model_provenance(tmp_path / "missing.py").content_hash is None
