"""`etfarm bisect`'s repository side: the range of commits to search, and a git worktree per commit.

The range is the first-parent line from GOOD (exclusive) to BAD (inclusive), as `git bisect --first-parent`
walks it: a merge is one step, the commits it brought in are not searched. Every input mistake is one
`UsageError` line (exit 2) naming what is wrong: not a repository, an unknown revision, GOOD not an ancestor
of BAD, the model file missing at GOOD.

`Worktrees` checks each commit out as a detached worktree under one temporary directory, so the user's
checkout (its index, its branch, its uncommitted files) is never touched. Leaving the block, by any exit
(an error, Ctrl-C, SIGTERM, which the CLI raises as KeyboardInterrupt), removes every worktree, the
repository's records of them (`git worktree prune`) and the directory.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from orchestrator.base.errors import UsageError
from orchestrator.base.procs import CommandResult, run, which

GIT_TIMEOUT_S = 60.0  # a worktree of a large repository takes a while; a hung git must not hang the bisect
WORKTREE_PREFIX = "etfarm-bisect-"


@dataclass(frozen=True)
class Commit:
    sha: str  # full
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:12]


@dataclass(frozen=True)
class CommitRange:
    """The repository's root, GOOD, and the commits after it up to BAD (the last), oldest first."""

    root: Path
    good: Commit
    commits: tuple[Commit, ...]

    @property
    def bad(self) -> Commit:
        return self.commits[-1]


def git(repo: Path, *args: str, check: bool = True) -> CommandResult:
    """`git -C repo ARGS` with a deadline; `check`: a failure is an error naming the command."""
    result = run(["git", "-C", str(repo), *args], timeout_s=GIT_TIMEOUT_S)
    if check and not result.ok:
        raise UsageError(f"git {' '.join(args)} in {repo}: {result.stderr.strip() or 'failed'}")
    return result


def repo_root(path: Path, option: str = "--repo") -> Path:
    """The top of the git work tree holding `path`."""
    if which("git") is None:
        raise UsageError(f"{option}: git is not installed on this host")
    if not path.is_dir():
        raise UsageError(f"{option} {path}: no such directory")
    found = git(path, "rev-parse", "--show-toplevel", check=False)
    if not found.ok:
        raise UsageError(f"{option} {path}: not a git repository")
    return Path(found.stdout.strip())


def resolve(root: Path, rev: str, option: str) -> Commit:
    """REV as a commit (its full sha and subject)."""
    if not rev or rev.startswith("-"):
        raise UsageError(f"{option} {rev!r}: not a revision")
    found = git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if not found.ok:
        raise UsageError(f"{option} {rev}: unknown revision in {root}")
    sha = found.stdout.strip()
    return Commit(sha, git(root, "log", "-1", "--format=%s", sha).stdout.strip())


def commit_range(repo: Path, good: str, bad: str, model_path: str) -> CommitRange:
    """The range to search, every input checked (one line each, exit 2)."""
    root = repo_root(repo)
    first, last = resolve(root, good, "--good"), resolve(root, bad, "--bad")
    if first.sha == last.sha:
        raise UsageError(f"--good and --bad are the same commit {first.short}")
    if not git(root, "merge-base", "--is-ancestor", first.sha, last.sha, check=False).ok:
        raise UsageError(f"--good {good} ({first.short}) is not an ancestor of --bad {bad} ({last.short})")
    check_model_at(root, first, model_path)
    listed = git(root, "log", "--first-parent", "--reverse", "--format=%H%x00%s", f"{first.sha}..{last.sha}").stdout
    commits = tuple(Commit(*line.split("\0", 1)) for line in listed.splitlines() if "\0" in line)
    if not commits or commits[-1].sha != last.sha:
        raise UsageError(f"--good {good} is not on the first-parent line of --bad {bad}: bisect follows first parents")
    return CommitRange(root, first, commits)


def check_model_at(root: Path, commit: Commit, model_path: str) -> None:
    """The model file (relative to the repository root) exists at `commit`."""
    if Path(model_path).is_absolute() or ".." in Path(model_path).parts:
        raise UsageError(f"--model {model_path}: give the path relative to the repository root {root}")
    if not git(root, "cat-file", "-e", f"{commit.sha}:{model_path}", check=False).ok:
        raise UsageError(f"--model {model_path}: no such file at --good ({commit.short}) in {root}")


class Worktrees:
    """A detached worktree per commit under one temporary directory; all removed on leaving the block."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder: Path | None = None
        self.made: dict[str, Path] = {}

    def __enter__(self) -> Worktrees:
        self.folder = Path(tempfile.mkdtemp(prefix=WORKTREE_PREFIX))
        return self

    def checkout(self, commit: Commit) -> Path:
        assert self.folder is not None, "use Worktrees in a with block"
        if commit.sha not in self.made:
            where = self.folder / commit.short
            self.made[commit.sha] = where  # before git runs: an interrupted `worktree add` is removed too
            git(self.root, "worktree", "add", "--detach", "--force", str(where), commit.sha)
        return self.made[commit.sha]

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Remove every worktree: each from git's records, then the directory (a second Ctrl-C meanwhile is
        held off by the CLI's grace period: the cleanup is short)."""
        for where in self.made.values():
            git(self.root, "worktree", "remove", "--force", str(where), check=False)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        git(self.root, "worktree", "prune", check=False)
        forget_modules(self.folder)
        self.made.clear()


def forget_modules(folder: Path | None) -> None:
    """Drop the modules imported from `folder` (a model's siblings, `import layers`), so that the next commit's
    export imports its own copy rather than the one Python cached from an earlier commit."""
    if folder is None:
        return
    prefix = str(folder) + os.sep
    for name, module in list(sys.modules.items()):
        if (getattr(module, "__file__", None) or "").startswith(prefix):
            del sys.modules[name]
