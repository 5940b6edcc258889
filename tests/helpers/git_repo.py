"""Real git repositories for bisect tests and benchmarks: commits made from file contents, a model file whose
depth is a parameter (an MLP of DEPTH Linear+ReLU layers: more layers, a slower program)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

MODEL = "models/mlp.py"
FACTORY = "build"


def mlp_source(depth: int, note: str = "", width: int = 64, broken: bool = False) -> str:
    """The model file; `note` adds a comment (a new source, the same program); `broken`: its factory raises."""
    comment = f"# {note}\n" if note else ""
    body = '    raise RuntimeError("work in progress: this commit does not build")\n' if broken else ""
    return (f'"""An MLP of {depth} layers."""\n{comment}import torch\nfrom torch import nn\n\n\n'
            f"def build():\n{body}    torch.manual_seed(0)\n    layers = []\n"
            f"    for _ in range({depth}):\n        layers += [nn.Linear({width}, {width}), nn.ReLU()]\n"
            f"    return nn.Sequential(*layers).eval(), (torch.randn(1, {width}),)\n")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), "-c", "user.name=etfarm test", "-c", "user.email=test@etfarm",
                           *args], check=True, capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


def make_repo(repo: Path, commits: list[tuple[str, Mapping[str, str]]]) -> list[str]:
    """A repository at `repo` with one commit per (subject, {path: content}); returns the shas, oldest first."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    shas = []
    for subject, files in commits:
        for path, content in files.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(content)
            git(repo, "add", path)
        git(repo, "commit", "-q", "--allow-empty", "-m", subject)
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas


def worktrees(repo: Path) -> list[str]:
    """The repository's worktrees as git lists them (the main checkout first)."""
    return [line.split(" ", 1)[1] for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]
