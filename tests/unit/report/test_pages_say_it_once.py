"""Pages that fit and never contradict themselves (synthetic runs): a source line only where it tells layers apart,
a tracer overhead within its noise said as such, a trust summary generated from the notes it sits over."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest

from orchestrator.base.cache import write_json_atomic
from orchestrator.cli import main
from orchestrator.profiles.stat_rows import read_stats_csv
from orchestrator.report.builders.comparison import comparison_view
from orchestrator.report.builders.report import build_report
from orchestrator.report.builders.trust import tracer_overhead
from orchestrator.report.formats import fmt_ms
from orchestrator.report.page.comparison import comparison_page
from orchestrator.report.page.sections import run_page
from orchestrator.report.render.html import render_html
from orchestrator.report.terminal.summary import summary
from orchestrator.results.model import RunFlag, load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from orchestrator.verdicts.compare import compare_against
from tests.helpers.synthetic_run import make_run_dir


def _rewrite_stats(run: Path, source: str) -> None:
    """Every op of the run at one source line: a model built as one nn.Sequential call (Method::execute has none)."""
    with open(run / "stats.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row["source_line"] = source if row["event_name"] != "Method::execute" else ""
    with open(run / "stats.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _rewrite_runs(run: Path, change) -> None:  # noqa: ANN001 - a ProcessRun -> ProcessRun
    job = load_manifest(run)
    devices = tuple(dataclasses.replace(d, models=tuple(dataclasses.replace(m, runs=tuple(change(r) for r in m.runs))
                                                        for m in d.models)) for d in job.devices)
    write_json_atomic(run / "manifest.json", dataclasses.replace(job, devices=devices).to_dict())


def test_a_source_line_every_op_shares_is_not_shown(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("local",), kernels=4)
    _rewrite_stats(run, "tiny_cnn.py:28")
    report = build_report(RunRecord(run))
    assert all(op.source_line == "" for d in report.models[0].ops for op in d.top)
    assert "tiny_cnn.py:28" not in render_html(run_page(report))
    terminal = summary(read_stats_csv(run / "stats.csv"))
    assert "tiny_cnn.py:28" not in terminal and "source" not in terminal.splitlines()[1]


def test_a_tracer_overhead_within_noise_is_said_so(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("local",), kernels=4)
    # the untraced run 20 % slower than the traced ones: a negative cost, which a tracer cannot have
    _rewrite_runs(run, lambda r: r if r.traced else dataclasses.replace(r, execute_ms=tuple(1.2 * v for v in r.execute_ms)))
    tracer = tracer_overhead(load_manifest(run).devices[0].models[0])
    assert tracer is not None and tracer.overhead is not None and tracer.overhead < -0.05 and tracer.within_noise
    html = render_html(run_page(build_report(RunRecord(run))))
    assert "within noise" in html and f"{tracer.overhead:+.1%}" not in html.replace("measured " + f"{tracer.overhead:+.1%}", "")


def test_a_first_nights_trust_summary_never_contradicts_its_flags(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("local",), kernels=4)
    _rewrite_runs(run, lambda r: dataclasses.replace(r, flag=RunFlag.INTERFERED, slowdown=0.4)
                  if r.label in ("run-3", "run-4") else r)
    comparison = compare_against(RunRecord(run), lambda device, model: None, per_op=False)  # no baseline yet: every pair new
    assert [p.verdict.value for p in comparison.pairs] == ["new"]
    html = render_html(comparison_page(comparison_view(comparison, [build_report(RunRecord(run))], "night 1", tmp_path)))
    trust = html[html.index('id="trust"'):]
    trust = trust[:trust.index("</section>")]
    assert "interfered" in trust and "No process run" not in trust


def test_load_p50_is_one_number_in_the_report_the_store_and_history_show(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run_dir(tmp_path / "run", devices=("local",), kernels=4)
    # run-1 loaded cold (first after staging), the untraced run warm at a level of its own
    _rewrite_runs(run, lambda r: dataclasses.replace(r, cold=True, load_ms=9.0) if r.label == "run-1" else
                  dataclasses.replace(r, load_ms=1.0) if not r.traced else
                  dataclasses.replace(r, load_ms=2.0 + int(r.label[-1]) / 10))
    load = build_report(RunRecord(run)).models[0].latency[0].load_p50_ms
    db = tmp_path / "results.db"
    with open_store(db) as store:
        run_id = store.record(RunRecord(run))
        stored = store._conn.execute("SELECT load_p50_ms FROM results").fetchone()[0]  # noqa: SLF001
    assert stored == pytest.approx(load)
    assert main(["history", "show", run_id, "--store", str(db)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.split()[:2] == ["local", "m0"])
    assert f"{fmt_ms(load)} (cold {fmt_ms(9.0)})" in row
