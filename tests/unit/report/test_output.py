"""Where reports are written, the `etfarm run` hook's failure path, and the `report` command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.base.errors import UsageError
from orchestrator.report.destination import REPORT_HTML, ReportFormat, check_target
from orchestrator.report.output import write_report, write_run_report
from orchestrator.results.record import RunRecord
from tests.helpers.synthetic_run import make_run_dir


def test_html_goes_beside_the_results_by_default(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a", "b"))
    assert write_report(RunRecord(run), ReportFormat.HTML, None) == run / REPORT_HTML
    assert (run / REPORT_HTML).read_text().startswith("<!DOCTYPE html>")


def test_markdown_into_a_directory_writes_its_charts_beside_it(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a", "b"))
    written = write_report(RunRecord(run), ReportFormat.MD, f"{tmp_path}/summary/")
    assert written == tmp_path / "summary" / "report.md"
    charts = sorted(p.name for p in (tmp_path / "summary" / "charts").iterdir())
    assert charts == ["m0-latency.svg", "m0-op-groups.svg", "m0-op-heatmap.svg"]
    assert "(charts/m0-latency.svg)" in written.read_text()
    assert (tmp_path / "summary" / "charts" / "m0-latency.svg").read_text().startswith("<svg")


def test_run_hook_warns_and_keeps_going_when_the_report_fails(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a",))
    (run / "stats.csv").write_text("not,a,stats,file\n1,2,3,4\n")
    warnings: list[str] = []
    assert write_run_report(RunRecord(run), warnings.append) is None
    assert len(warnings) == 1 and "report not written" in warnings[0] and "not an etfarm stats.csv" in warnings[0]
    assert (run / "manifest.json").is_file() and not (run / REPORT_HTML).exists()


def etfarm(*args: str) -> subprocess.CompletedProcess[str]:
    code = ("import sys; from orchestrator.cli import main; rc = main(sys.argv[1:]); "
            "assert 'torch' not in sys.modules, 'report imported torch'; sys.exit(rc)")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, check=False)


def test_report_command_formats_and_never_imports_torch(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a", "b"))
    result = etfarm("report", str(run))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"report: {run / REPORT_HTML}"
    result = etfarm("report", str(run), "--format", "csv", "--baseline", "b")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1].startswith("m0,a,ok,5,")


def test_report_command_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a",))
    for args, message in ((["report", str(tmp_path / "nope")], "neither a run directory nor"),
                          (["report", str(run), "--baseline", "zz"], "--baseline: device 'zz' is not in run"),
                          (["report", str(run), "-f", "json", "-o", str(tmp_path / "no" / "x.json")],
                           f"--output {tmp_path / 'no' / 'x.json'}: directory {tmp_path / 'no'} does not exist")):
        result = etfarm(*args)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_history_comes_from_the_store(tmp_path: Path) -> None:
    """Three runs recorded in a real SQLite store: the report of the last shows all three over time."""
    from orchestrator.store import open_store

    db = tmp_path / "results.db"
    runs = [make_run_dir(tmp_path / f"run{i}", devices=("a", "b"), run_id=f"20261120-00000{i}-abcd",
                         started=f"2026-11-2{i}T00:00:00+0000", seed=i) for i in range(3)]
    with open_store(db) as store:
        for run in runs:
            store.record(RunRecord(run))
    result = etfarm("report", "20261120-000002-abcd", "--store", str(db), "--format", "json")
    assert result.returncode == 0, result.stderr
    import json

    history = json.loads(result.stdout)["models"][0]["history"]
    assert [p["run_id"] for p in history if p["device"] == "a"] == [f"20261120-00000{i}-abcd" for i in range(3)]
    html = etfarm("report", str(runs[2]), "--store", str(db))
    assert html.returncode == 0, html.stderr
    page = (runs[2] / REPORT_HTML).read_text()
    assert "no history" not in page and 'data-chart="m0-history"' in page and "20261120-000000-abcd" in page
    # No store file: no history, and nothing created.
    assert etfarm("report", str(runs[2]), "--store", str(tmp_path / "none.db")).returncode == 0
    assert not (tmp_path / "none.db").exists() and "no history" in (runs[2] / REPORT_HTML).read_text()


def test_report_never_writes_over_the_runs_own_files(tmp_path: Path) -> None:
    """Issue 21 item 6: `report --output RUN/manifest.json` (or stats.csv, or anything the run holds) is refused,
    exit 2, the file untouched; the report's own files (report.*, report-vs-*, charts/) may go there."""
    run = make_run_dir(tmp_path / "run", devices=("a",))
    manifest = (run / "manifest.json").read_bytes()
    stats = (run / "stats.csv").read_bytes()
    for args in ((str(run / "manifest.json"), "json"), (str(run / "stats.csv"), "csv"), (str(run / "a"), "md")):
        result = etfarm("report", str(run), "--output", args[0], "--format", args[1])
        assert result.returncode == 2 and "never writes over a run's own files" in result.stderr, result.stderr
    assert (run / "manifest.json").read_bytes() == manifest and (run / "stats.csv").read_bytes() == stats
    assert etfarm("report", str(run), "--output", str(run / "report.md"), "--format", "md").returncode == 0
    assert etfarm("report", str(run), "--output", f"{run}/", "--format", "md").returncode == 0
    assert (run / "report.md").is_file()


def test_a_report_file_whose_folder_cannot_take_it_is_one_line_naming_its_flag(tmp_path: Path) -> None:
    """`compare --html` said `--output`, and `directory X does not exist` of a file X that exists."""
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    for target, problem in ((notes / "page.html", f"{notes} is a file, not a directory"),
                            (notes / "deeper" / "page.html", f"{notes} is a file, not a directory"),
                            (tmp_path / "gone" / "page.html", f"directory {tmp_path / 'gone'} does not exist")):
        with pytest.raises(UsageError) as err:
            check_target(target, "--html")
        assert str(err.value) == f"--html {target}: {problem}"
    check_target(tmp_path / "page.html", "--html")  # a folder that exists and is ours: fine


def test_the_run_hooks_warning_never_calls_a_failed_jobs_results_complete(tmp_path: Path) -> None:
    """A disk that filled mid-run: the report fails too, and its warning used to say "are complete"."""
    from dataclasses import replace

    from orchestrator.results.model import JobStatus, load_manifest

    run = make_run_dir(tmp_path / "run", devices=("a",))
    (run / REPORT_HTML).mkdir()  # the report cannot be written there
    job = load_manifest(run)
    warnings: list[str] = []
    assert write_run_report(RunRecord(run, job=replace(job, status=JobStatus.FAILED)), warnings.append) is None
    assert len(warnings) == 1 and f"the results in {run} are partial (the job is failed)" in warnings[0], warnings
    assert write_run_report(RunRecord(run, job=replace(job, status=JobStatus.OK)), warnings.append) is None
    assert f"the results in {run} are complete" in warnings[1], warnings
