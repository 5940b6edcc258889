"""Every comparison has a page that shows every op, and a comparison of nothing in common is an error (synthetic
runs and verdicts)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.base.codec import encode
from orchestrator.cli import main
from orchestrator.report.builders.comparison import comparison_view
from orchestrator.report.page.comparison import comparison_page
from orchestrator.report.render.html import render_html
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from orchestrator.verdicts.compare import Comparison, OpVerdict, PairVerdict
from orchestrator.verdicts.statistics import Estimate, Verdict, VerdictSettings
from tests.unit.store.rundirs import make_run_dir

# every op moved 1.30x-2.00x, none beyond its threshold with confidence: all inconclusive
RATIOS = (1.30, 2.00, 0.60, 1.55, 1.02)


def _op(k: int, moved: float) -> OpVerdict:
    est = Estimate(moved, moved * 0.5, moved * 1.6, 0.2, 3, 3, 1.0, moved)
    return OpVerdict("DELEGATE_CALL", k, f"Convolution (NHWC, F32) IGEMM #{k}", Verdict.INCONCLUSIVE, est, 0.4,
                     module_path=f"features.{k}")


def test_a_compare_page_lists_every_op_most_moved_first() -> None:
    settings = VerdictSettings()
    pair = PairVerdict("local", "tiny_cnn", "tiny_cnn", Verdict.INCONCLUSIVE,
                       Estimate(1.4, 0.9, 2.1, 0.2, 3, 3, 1.0, 1.4), settings.threshold, settings.op_threshold,
                       ops=tuple(_op(k, r) for k, r in enumerate(RATIOS)))
    html = render_html(comparison_page(comparison_view(Comparison("a", "b", settings, (pair,)), [], "A/B", None)))
    section = html[html.index('id="op-verdicts"'):html.index('id="structure"')]
    assert "No op regressed or improved" not in section
    shown = [float(x) for x in re.findall(r"<td[^>]*>(\d\.\d{3})x</td>", section)]
    assert shown == [2.0, 0.6, 1.55, 1.3, 1.02]  # every op, the one that moved most (either way) first
    assert section.count("inconclusive") >= len(RATIOS) and "[0.650, 2.080]" in section  # each op's interval
    assert "0 of 5 ops regressed or improved" in section
    data = encode(Comparison("a", "b", settings, (pair,)))  # the JSON names its estimator, as the columns do
    assert data["statistic"] == "state-aware mean" and settings.center == "auto"  # the default since issue 37


def test_compare_of_runs_with_nothing_in_common_is_one_line_exit_2(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run_dir(tmp_path, "run-a", "2026-01-01T00:00:00+0000", devices=("local",), models=("mlp",))
    b = make_run_dir(tmp_path, "run-b", "2026-01-02T00:00:00+0000", devices=("local",), models=("cnn",))
    assert main(["compare", str(a), str(b)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    assert "A run-a (mlp on local" in err and "B run-b (cnn on local" in err and "no (device, model) in common" in err
    c = make_run_dir(tmp_path, "run-c", "2026-01-03T00:00:00+0000", devices=("rpi5",), models=("mlp",))
    assert main(["compare", str(a), str(c)]) == 2  # the same model on another device: nothing to compare either
    assert main(["compare", str(a), str(make_run_dir(tmp_path, "run-d", "2026-01-04T00:00:00+0000",
                                                     devices=("local", "rpi5"), models=("mlp", "cnn")))]) != 2
    db = tmp_path / "results.db"  # B given alone against a --baseline the user names: the same rule
    with open_store(db) as store:
        store.record(RunRecord(a))
        store.record(RunRecord(b))
    assert main(["compare", str(b), "--baseline", "run-a", "--store", str(db)]) == 2
    assert "no (device, model) in common" in capsys.readouterr().err


def test_a_run_ab_page_of_two_models_says_what_it_could_not_compare_and_lists_flagged_runs() -> None:
    """`run --ab` of two different models (its jobs in memory, no run directories): the page said "Same ops in both
    runs" of ops it never compared, and "No process run of either side was flagged" above the runs' flagged runs."""
    from orchestrator.report.model import Report, TrustNote

    settings = VerdictSettings()
    pair = PairVerdict("local", "tiny_cnn", "deep_mlp", Verdict.IMPROVED, Estimate(0.05, 0.04, 0.06, 0.01, 3, 3, 1.0, 0.05),
                       settings.threshold, settings.op_threshold)
    flagged = TrustNote("local", "deep_mlp", "interfered", "run-1 interfered (calibration +25%): kept in the statistics")
    run = Report("r1", "ok", "2026-11-27T16:24:08+0000", None, ("local",), None, (), (), (), "", (), trust=(flagged,))
    html = render_html(comparison_page(comparison_view(Comparison("tiny_cnn", "deep_mlp", settings, (pair,)), [run],
                                                       "A/B", None)))
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert "Same ops in both runs" not in text and "No per-op statistics to compare for local" in text
    trust = text[text.index("What to trust"):]
    assert "No process run of either side was flagged" not in trust
    assert "run-1 interfered (calibration +25%)" in trust


def test_the_verdict_sentence_and_table_give_each_sides_p50_not_the_judging_statistic() -> None:
    """Issue 37 item 6: the page leads with the p50 of each side's clean executions; the ratio is the verdict's."""
    from orchestrator.report.formats import fmt_ms
    from orchestrator.verdicts.figures import SideFigures

    settings = VerdictSettings()
    # the judging statistic's levels (1.3 -> 1.95 ms) are not the p50s (1.0 -> 1.5 ms) users know
    pair = PairVerdict("local", "tiny_cnn", "tiny_cnn", Verdict.REGRESSED, Estimate(1.5, 1.4, 1.6, 0.001, 10, 10, 1.3, 1.95),
                       settings.threshold, settings.op_threshold,
                       figures=(SideFigures(1.0, 1.1, 300), SideFigures(1.5, 1.6, 300)))
    html = render_html(comparison_page(comparison_view(Comparison("a", "b", settings, (pair,)), [], "A/B", None)))
    section = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html[html.index('id="verdicts"'):html.index('id="op-verdicts"')]))
    section = section.replace("&gt;", ">")
    assert f"(p50 {fmt_ms(1.0)} -> {fmt_ms(1.5)} ms" in section and "A p50 ms" in section and "B p50 ms" in section
    assert fmt_ms(1.3) not in section and fmt_ms(1.95) not in section and "1.500x" in section
