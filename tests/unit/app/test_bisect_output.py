"""What a bisect says (the JSON document, the one-line answer, the page's links), a step's outcome from its A/B verdicts
per device, and the steps kept for --resume."""

from __future__ import annotations

from pathlib import Path

from orchestrator.app.bisect_output import BisectResult, steps_table, write_page
from orchestrator.app.bisect_probe import judged, step_from_dict
from orchestrator.app.bisect_range import Commit, CommitRange
from orchestrator.app.bisect_search import Outcome, Reason, Search, Step
from orchestrator.base.codec import encode
from orchestrator.results.night_marks import read_marks, record_night
from orchestrator.store import open_store
from orchestrator.verdicts.compare import Comparison, PairVerdict
from orchestrator.verdicts.statistics import Estimate, Verdict, VerdictSettings

GOOD = Commit("0" * 40, "good")
COMMITS = tuple(Commit(str(k) * 40, f"commit {k}") for k in range(1, 5))


def result(tmp_path: Path, search: Search, measured: tuple[str, ...] = ()) -> BisectResult:
    return BisectResult(CommitRange(tmp_path, GOOD, COMMITS), "m.py:build", search, measured, folder=tmp_path)


def test_a_named_culprit(tmp_path: Path) -> None:
    page = tmp_path / "004-x" / "report-ab.html"
    bad = Step(COMMITS[3].sha, "commit 4", Outcome.SLOWER, "regressed", 1.2, 1.1, 1.3, measured=True, page=str(page))
    same = Step(COMMITS[1].sha, "commit 2", Outcome.SLOWER, "regressed", 1.2, 1.1, 1.3, reason="same program as 4444")
    found = result(tmp_path, Search(1, Reason.FOUND, (bad, same)), (COMMITS[3].sha,))
    data = encode(found.document())
    assert data["culprit"] == COMMITS[1].sha and data["reason"] is None and data["measured"] == [COMMITS[3].sha]
    assert data["against_good"] == {"ratio": 1.2, "ci_low": 1.1, "ci_high": 1.3} and data["parent"] == COMMITS[0].sha
    assert found.sentence.startswith(f"culprit {COMMITS[1].sha} (commit 2): 1.200x [1.100, 1.300] against good")
    html = write_page(found, tmp_path).read_text()
    assert 'href="004-x/report-ab.html"' in html and "same program as 4444" in html
    assert "same program as 4444" in steps_table(found)


def test_no_culprit_says_why_and_where(tmp_path: Path) -> None:
    skipped = Step(COMMITS[0].sha, "commit 1", Outcome.SKIPPED, "skipped", reason="factory raised")
    found = result(tmp_path, Search(None, Reason.ALL_SKIPPED, (skipped,), (0, 1)))
    data = encode(found.document())
    assert data["culprit"] is None and data["reason"] == "every candidate skipped"
    assert data["suspects"] == [COMMITS[0].sha, COMMITS[1].sha]
    assert found.sentence == f"no culprit named: every candidate skipped; it is one of {COMMITS[0].short}, {COMMITS[1].short}"


def test_steps_kept_in_the_store_round_trip(tmp_path: Path) -> None:
    step = Step("a" * 40, "s", Outcome.NOT_SLOWER, "unchanged", 1.01, 0.99, 1.03, measured=True, pte="p", run_ids=("r",))
    with open_store(tmp_path / "r.db") as store:
        store.bisect_steps().record("good", "p", "setup", encode(step))
        assert store.bisect_steps().find("good", "p", "other setup") is None
        found = store.bisect_steps().find("good", "p", "setup")
    assert found is not None and step_from_dict(found) == step


def test_night_json_names_the_culprit(tmp_path: Path) -> None:
    bisect = {"device": "local", "model": "mlp", "run_id": "r1", "culprit": "c" * 40}
    record_night([tmp_path], "r1", None, {"regressed": 1}, [], [bisect, "junk"])
    _, night = read_marks(tmp_path)
    assert night is not None and night.culprit("r1", "local", "mlp") == "c" * 40
    assert night.culprit("r1", "local", "other") is None


def pair(device: str, verdict: Verdict, ratio: float | None = None, reason: str | None = None) -> PairVerdict:
    estimate = Estimate(ratio, ratio - 0.05, ratio + 0.05, 0.01, 6, 6, 1.0, ratio) if ratio is not None else None
    return PairVerdict(device, "a", "b", verdict, estimate=estimate, reason=reason)


def test_a_step_is_slower_when_any_device_regressed() -> None:
    commit = COMMITS[0]
    both = Comparison("a", "b", VerdictSettings(), (pair("x", Verdict.UNCHANGED, 1.01), pair("y", Verdict.REGRESSED, 1.3)))
    step = judged(commit, both)
    assert step.outcome is Outcome.SLOWER and step.ratio == 1.3 and step.reason == "on y"
    calm = Comparison("a", "b", VerdictSettings(), (pair("x", Verdict.UNCHANGED, 1.01), pair("y", Verdict.IMPROVED, 0.8)))
    assert judged(commit, calm).outcome is Outcome.NOT_SLOWER
    unsure = Comparison("a", "b", VerdictSettings(), (pair("x", Verdict.UNCHANGED, 1.01), pair("y", Verdict.INCONCLUSIVE, 1.04)))
    assert judged(commit, unsure).outcome is Outcome.UNDECIDED
    half = Comparison("a", "b", VerdictSettings(), (pair("x", Verdict.UNCHANGED, 1.01), pair("y", Verdict.NO_DATA, reason="down")))
    assert judged(commit, half).outcome is Outcome.UNDECIDED  # one device could not say: the step cannot clear it
    none = Comparison("a", "b", VerdictSettings(), (pair("y", Verdict.NO_DATA, reason="device down"),))
    skipped = judged(commit, none)
    assert skipped.outcome is Outcome.SKIPPED and skipped.reason == "run failed: device down"
