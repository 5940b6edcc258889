"""`etfarm bisect` on a real git repository with real exports at each commit and real A/B jobs on `local`.

The repository (made here): GOOD has an 8-layer MLP; then a notes commit, a commit whose factory raises, a
commit that only adds a comment to the model, the culprit (32 layers: four times the depth, beyond every speed
state of this host's processes, tests/integration/verdicts/test_nightly.py), and a notes commit (BAD). Only BAD is measured: the comment commit's program is GOOD's byte
for byte, the culprit's is BAD's, the broken commit is skipped and named. A second bisect with --resume
takes BAD's step from the store; Ctrl-C (a real SIGINT to a real process) leaves no worktree behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.base.errors import EXIT_INTERRUPTED
from orchestrator.cli import main
from tests.helpers.git_repo import FACTORY, MODEL, git, make_repo, mlp_source, worktrees

SPEC = f"{MODEL}:{FACTORY}"
WIDTH = 256
MEASURE = ("--runs", "6", "--iterations", "10", "--warmup", "2", "--max-runs", "12")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("bisect") / "repo"
    # 256 wide (as tests/integration/verdicts/test_nightly_bisect.py): a program of about 0.1 ms whose fourfold depth
    # stands far above a busy host's noise; 64 wide ran in 17 us, where one interleaved job beside other work can
    # come back inconclusive
    shas = make_repo(root, [
        ("an 8-layer MLP", {MODEL: mlp_source(8, width=WIDTH), "NOTES.md": "notes\n"}),
        ("notes: more", {"NOTES.md": "notes\nmore\n"}),
        ("model: work in progress", {MODEL: mlp_source(8, width=WIDTH, broken=True)}),
        ("model: a comment", {MODEL: mlp_source(8, note="the layers", width=WIDTH)}),
        ("model: 24 more layers", {MODEL: mlp_source(32, note="the layers", width=WIDTH)}),
        ("notes: the end", {"NOTES.md": "notes\nmore\nthe end\n"}),
    ])
    return root, shas


def bisect(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["bisect", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def first(repo: tuple[Path, list[str]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root, shas = repo
    folder = tmp_path_factory.mktemp("first")
    status_before = git(root, "status", "--porcelain")
    code = main(["bisect", "--repo", str(root), "--good", shas[0], "--bad", "main", "--model", SPEC, *MEASURE,
                 "--out", str(folder / "out"), "--store", str(folder / "results.db"), "--json"])
    return {"code": code, "folder": folder, "status_before": status_before}


def test_bisect_names_the_culprit_measuring_only_bad(first: dict[str, Any], repo: tuple[Path, list[str]],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    root, shas = repo
    assert first["code"] == 0
    result = json.loads((first["folder"] / "out" / "bisect.json").read_text())
    assert result["culprit"] == shas[4] and result["reason"] is None
    assert result["measured"] == [shas[5]]  # BAD alone: every other program was GOOD's, BAD's, or none
    steps = {s["sha"]: s for s in result["steps"]}
    assert [s["sha"] for s in result["steps"]][0] == shas[5]
    assert steps[shas[5]]["measured"] and steps[shas[5]]["verdict"] == "regressed" and steps[shas[5]]["ratio"] > 1.5
    assert steps[shas[2]]["outcome"] == "skipped" and "work in progress" in steps[shas[2]]["reason"]
    assert f"'{MODEL}:{FACTORY}'" in steps[shas[2]]["reason"]  # its path in the repository, not the worktree's
    assert steps[shas[3]]["reason"].startswith("same program as good")
    assert steps[shas[4]]["reason"] == f"same program as {shas[5][:12]}" and not steps[shas[4]]["measured"]
    # the culprit's parent runs GOOD's program: its ratio against the parent is its ratio against GOOD
    assert result["against_parent"] == result["against_good"] and result["parent"] == shas[3]
    # each measured step has its A/B page, linked from the bisect's page
    page = Path(steps[shas[5]]["page"])
    assert page.is_file() and page.name == "report-ab.html"
    html = (first["folder"] / "out" / "bisect.html").read_text()
    assert os.path.relpath(page, first["folder"] / "out") in html and shas[4][:12] in html


def test_the_users_checkout_is_untouched(first: dict[str, Any], repo: tuple[Path, list[str]]) -> None:
    root, shas = repo
    assert git(root, "rev-parse", "HEAD") == shas[5] and git(root, "status", "--porcelain") == first["status_before"]
    assert worktrees(root) == [str(root)]


def test_resume_takes_measured_steps_from_the_store(first: dict[str, Any], repo: tuple[Path, list[str]],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    root, shas = repo
    out = first["folder"] / "again"
    code, text, _ = bisect(capsys, "--repo", str(root), "--good", shas[0], "--bad", shas[5], "--model", SPEC,
                           *MEASURE, "--out", str(out), "--store", str(first["folder"] / "results.db"), "--resume")
    assert code == 0
    result = json.loads((out / "bisect.json").read_text())
    assert result["culprit"] == shas[4] and result["measured"] == []
    assert result["steps"][0]["resumed"] and result["steps"][0]["sha"] == shas[5]
    assert not [p for p in out.iterdir() if p.is_dir()]  # no job ran
    assert f"culprit {shas[4]}" in text and "from the store" in text


def test_a_folder_holding_a_bisect_is_refused_without_resume(first: dict[str, Any], repo: tuple[Path, list[str]],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    root, shas = repo
    code, _, err = bisect(capsys, "--repo", str(root), "--good", shas[0], "--bad", shas[5], "--model", SPEC,
                          "--out", str(first["folder"] / "out"), "--store", str(first["folder"] / "results.db"))
    assert code == 2 and err.strip().endswith("already holds a bisect; choose a new directory (or add --resume)")


def test_bad_not_slower_exits_1(repo: tuple[Path, list[str]], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    root, shas = repo
    code, text, _ = bisect(capsys, "--repo", str(root), "--good", shas[0], "--bad", shas[1], "--model", SPEC,
                           "--out", str(tmp_path / "out"), "--store", str(tmp_path / "r.db"), "--json")
    result = json.loads(text)
    assert code == 1 and result["culprit"] is None and result["reason"] == "no regression between good and bad"
    assert result["measured"] == []  # BAD's program is GOOD's: nothing to measure


@pytest.mark.parametrize("case", ["not-a-repo", "unknown-good", "unknown-bad", "not-ancestor", "model-missing",
                                  "bad-spec"])
def test_bad_input_is_one_line_exit_2(case: str, repo: tuple[Path, list[str]], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    root, shas = repo
    args = {"--repo": str(root), "--good": shas[0], "--bad": shas[5], "--model": SPEC}
    expected = {"not-a-repo": "not a git repository", "unknown-good": "--good nosuch: unknown revision",
                "unknown-bad": "--bad v9: unknown revision", "not-ancestor": "is not an ancestor of --bad",
                "model-missing": "no such file at --good", "bad-spec": "expected PATH.py:FACTORY"}[case]
    if case == "not-a-repo":
        args["--repo"] = str(tmp_path)
    elif case == "unknown-good":
        args["--good"] = "nosuch"
    elif case == "unknown-bad":
        args["--bad"] = "v9"
    elif case == "not-ancestor":
        args["--good"], args["--bad"] = shas[5], shas[0]
    elif case == "model-missing":
        args["--model"] = "models/other.py:build"
    else:
        args["--model"] = MODEL
    code, out, err = bisect(capsys, *[w for kv in args.items() for w in kv], "--out", str(tmp_path / "out"))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], err
    assert out == "" and not (tmp_path / "out").exists()


def test_ctrl_c_leaves_no_worktree(repo: tuple[Path, list[str]], tmp_path: Path) -> None:
    root, shas = repo
    temp, out = tmp_path / "tmp", tmp_path / "out"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    job = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "bisect", "--repo", str(root), "--good", shas[0],
                            "--bad", shas[5], "--model", SPEC, "--runs", "40", "--iterations", "50", "--out", str(out),
                            "--store", str(tmp_path / "r.db")], env=env, text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_default_sigint)
    try:
        deadline = time.monotonic() + 300  # two exports first (a cold cache on a loaded host: a minute or two)
        while not any(out.glob("*/manifest.json")):  # the first step's A/B job is running
            assert job.poll() is None, job.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the first step's job did not start"
            time.sleep(0.2)
        assert len(worktrees(root)) > 1 and list(temp.glob("etfarm-bisect-*"))
        job.send_signal(signal.SIGINT)
        _, err = job.communicate(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == EXIT_INTERRUPTED, err[-2000:]
    assert worktrees(root) == [str(root)] and not list(temp.glob("etfarm-bisect-*"))
    assert git(root, "status", "--porcelain") == ""


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as an interactive shell starts it (DESIGN.md: traps)
