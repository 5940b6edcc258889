"""A night bisects its own confirmed regression (plan `bisect: true`) and names the culprit commit on its page, in
its JSON, in night.json and in the dashboard's regressions list.

Real git, real exports, real jobs on `local`: night 1 runs an 8-layer MLP at commit c0 (the baseline); then
c1 changes notes, c2 makes the model four times as deep, c3 adds a comment to it; night 2 at c3 regresses,
confirms, and bisects c0..c3 (three commits on the first-parent line): it measures c3 against c0 (an A/B
job); c1's program is c0's, c2's is c3's, so c2 is named without another job.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.cli import main
from tests.helpers.git_repo import MODEL, git, make_repo, mlp_source

WIDTH = 256


def plan(path: Path, repo: Path, report: Path, **extra: object) -> Path:
    path.write_text(json.dumps({"devices": ["local"], "models": [{"spec": f"{repo / MODEL}:build", "name": "mlp"}],
                                "runs": 6, "confirm_max_runs": 12, "iterations": 10, "warmup": 2, "threshold": "5%", "noise_floor": "0%",
                                "report": str(report), "bisect": True, "bisect_budget": 3, **extra}))
    return path


def test_a_regressed_night_names_the_culprit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, report, store, site = tmp_path / "repo", tmp_path / "reports", tmp_path / "results.db", tmp_path / "site"
    # 256 wide: a program of about 0.1 ms whose fourfold depth stands far above a busy host's noise (64 wide ran in
    # 17 us, where an interleaved confirmation beside other work once came back inconclusive: nothing to bisect)
    (c0,) = make_repo(repo, [("an 8-layer MLP", {MODEL: mlp_source(8, width=WIDTH), "NOTES.md": "a\n"})])
    plan_file = plan(tmp_path / "plan.json", repo, report)
    assert main(["nightly", "--plan", str(plan_file), "--store", str(store), "-q"]) == 0
    capsys.readouterr()
    for subject, files in [("notes", {"NOTES.md": "a\nb\n"}), ("model: four times as deep", {MODEL: mlp_source(32, width=WIDTH)}),
                           ("model: a comment", {MODEL: mlp_source(32, note="deep now", width=WIDTH)})]:
        for path, text in files.items():
            (repo / path).write_text(text)
            git(repo, "add", path)
        git(repo, "commit", "-q", "-m", subject)
    c1, c2, c3 = git(repo, "rev-list", "--reverse", f"{c0}..HEAD").split()

    assert main(["nightly", "--plan", str(plan_file), "--store", str(store), "-q"]) == 1
    printed = capsys.readouterr().out
    night = json.loads(max(report.glob("nightly-*.json"), key=lambda p: p.stat().st_mtime).read_text())
    (found,) = night["bisects"]
    assert (found["culprit"], found["good"], found["bad"], found["device"]) == (c2, c0, c3, "local")
    assert found["measured"] == 1 and not found["budget_ran_out"]
    assert any(f"culprit {c2[:12]}" in note for note in night["notes"])
    html = max(report.glob("nightly-*.html"), key=lambda p: p.stat().st_mtime).read_text()
    assert c2[:12] in html and f"culprit {c2[:12]}" in printed
    assert Path(found["page"]).is_file()  # the bisect's own page, its step's A/B page beside

    assert main(["publish", "--out", str(site), "--store", str(store)]) == 0
    assert f'culprit <span class="mono">{c2[:12]}</span>' in (site / "regressions.html").read_text()
