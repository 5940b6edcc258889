"""Where a night's bisect takes its commit range from: the plan's repository's HEAD recorded with each night
(`repo:`), else each model's commit recorded in the manifest; and what the night says of a bisect."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from orchestrator.app.bisect_night import NightBisect, _baseline_commit, night_repo_head
from orchestrator.app.nightly_plan import NightlyPlan
from orchestrator.base.codec import encode
from orchestrator.results.job_config import ModelArtifacts
from orchestrator.results.night_marks import NIGHT_JSON
from orchestrator.verdicts.compare import PairVerdict
from orchestrator.verdicts.statistics import Verdict
from tests.helpers.git_repo import make_repo

PAIR = PairVerdict("local", "mlp", "mlp", Verdict.REGRESSED, source_a="base-run")


def plan(tmp_path: Path, repo: Path | None) -> NightlyPlan:
    return NightlyPlan(tmp_path / "plan.yaml", ("local",), (), tmp_path / "r", tmp_path / "o", bisect=True, repo=repo)


class FakeStore:
    """The store's answers about the baseline run (unit test: the real store is test_nightly_bisect.py's)."""

    def __init__(self, run_dir: Path, commit: str | None) -> None:
        self.folder, self.commit = run_dir, commit

    def has_job(self, run_id: str) -> bool:
        return run_id == "base-run"

    def run_dir(self, run_id: str) -> Path:
        return self.folder

    def job(self, run_id: str, samples: bool = True) -> SimpleNamespace:
        return SimpleNamespace(models=[ModelArtifacts("mlp", "m.py:build", "xnnpack", "k", "p", git_commit=self.commit)])


def test_the_plans_repository_head_is_recorded_with_the_night(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", [("one", {"a.txt": "1"}), ("two", {"a.txt": "2"})])
    assert night_repo_head(plan(tmp_path, tmp_path / "repo")) == shas[-1]
    assert night_repo_head(plan(tmp_path, None)) is None
    assert night_repo_head(plan(tmp_path, tmp_path)) is None  # not a repository: no head, never an error


def test_the_baseline_commit_comes_from_its_night_with_repo(tmp_path: Path) -> None:
    (tmp_path / NIGHT_JSON).write_text(json.dumps({"night": "base-run", "repo_head": "c" * 40}))
    assert _baseline_commit(plan(tmp_path, tmp_path), FakeStore(tmp_path, "m" * 40), PAIR) == "c" * 40  # type: ignore[arg-type]
    (tmp_path / NIGHT_JSON).write_text(json.dumps({"night": "base-run"}))  # a night from before bisect
    assert _baseline_commit(plan(tmp_path, tmp_path), FakeStore(tmp_path, "m" * 40), PAIR) is None  # type: ignore[arg-type]


def test_the_baseline_commit_is_its_models_without_repo(tmp_path: Path) -> None:
    store = FakeStore(tmp_path, "d" * 40 + "+dirty")
    assert _baseline_commit(plan(tmp_path, None), store, PAIR) == "d" * 40  # type: ignore[arg-type]
    assert _baseline_commit(plan(tmp_path, None), FakeStore(tmp_path, None), PAIR) is None  # type: ignore[arg-type]


def test_what_the_night_says() -> None:
    found = NightBisect("local", "mlp", "r1", "a" * 40, "b" * 40, "c" * 40, "model: deeper", 1.2, measured=2)
    assert found.note == f"bisect local mlp: culprit {'c' * 12} (model: deeper) 1.200x against good, 2 commit(s) measured"
    none = NightBisect("local", "mlp", "r1", "a" * 40, "b" * 40, None, reason="budget of 2 measured commits ran out")
    assert none.note == "bisect local mlp: no culprit named (budget of 2 measured commits ran out)"
    assert encode(found)["culprit"] == "c" * 40
