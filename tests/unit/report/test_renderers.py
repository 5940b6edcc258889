"""Renderers only write out the page: what each format shows, that both say the same, that HTML stays offline."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.report.builders.report import build_report
from orchestrator.report.model import Report
from orchestrator.report.page.blocks import NO_CHARTS, plain
from orchestrator.report.page.sections import run_page
from orchestrator.report.render.charts import report_charts
from orchestrator.report.render.export import CSV_COLUMNS, render_csv, render_json
from orchestrator.report.render.html import render_html as html_of_page
from orchestrator.report.render.markdown import render_markdown as markdown_of_page
from orchestrator.results.record import RunRecord
from orchestrator.store.history import HistoryPoint
from tests.helpers.synthetic_run import make_run_dir


def render_html(report: Report, charts: bool = True) -> str:
    return html_of_page(run_page(report, report_charts(report) if charts else NO_CHARTS))


def render_markdown(report: Report, chart_dir: str | None = None) -> str:
    return markdown_of_page(run_page(report, report_charts(report)), chart_dir)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    run = make_run_dir(tmp_path_factory.mktemp("run"), devices=("pixel8", "rpi5", "dead"), models=("cnn", "mlp"),
                       speed=(1.0, 2.0, 1.0), failed=("dead",))
    return build_report(RunRecord(run))


def test_html_is_one_offline_file_with_every_section(report: Report) -> None:
    page = render_html(report)
    # Nothing to fetch: no scripts, stylesheets, images or frames by URL; only SVG namespaces mention http.
    assert not re.search(r"<(script|img|iframe|object|embed)\b", page)
    assert re.findall(r"<link[^>]*>", page) == ['<link rel="icon" href="data:,">']  # stops the favicon request
    assert not re.search(r"""(src|href)=["'](?!#|data:)""", page)
    assert set(re.findall(r"https?://[^\s\"'<>)]+", page)) <= {"http://www.w3.org/2000/svg",
                                                               "http://www.w3.org/1999/xlink"}
    assert "Which device is fast enough?" in page
    assert page.count('<figure class="chart"') == 6  # per model: latency, op groups, heatmap (no history)
    assert page.count("<svg") == 6
    for text in ('<span class="badge good">fastest</span> <b>pixel8</b>', "faster than <b>rpi5</b>", "2.00x",
                 "What the devices were", "What to trust", "device unreachable",
                 "no history: this model has no earlier runs", "replication unit", "schedutil", "cpu-thermal 40-45 °C",
                 "head.softmax", "net.py:42", '<span class="muted">delegate over </span><span class="mono">features.0 … '
                 "classifier (3)</span>"):
        assert text in page, text


def test_html_escapes_what_it_shows(tmp_path: Path) -> None:
    # Names are plain by the manifest's rule; a device's error is whatever it said.
    run = make_run_dir(tmp_path / "run", devices=("a", "b"), models=("m",), failed=("b",))
    manifest = run / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"device unreachable"', '"<b>evil</b>"'))
    page = render_html(build_report(RunRecord(run)), charts=False)
    assert "<b>evil</b>" not in page and "&lt;b&gt;evil&lt;/b&gt;" in page


def test_html_shows_history_when_the_store_has_some(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a", "b"))
    points = [HistoryPoint(f"run-{i}", f"2026-11-{10 + i}T00:00:00", "a", "m0", "ok", 1.0 + 0.1 * i, 1.2, "abc1234")
              for i in range(4)]
    page = render_html(build_report(RunRecord(run), history=points))
    assert "no history" not in page and "run-3" in page and "abc1234" in page
    assert 'data-chart="m0-history"' in page


def test_the_navigation_lists_every_section_of_the_page(report: Report) -> None:
    page = run_page(replace(report, numerics_error="no numerics.json in the run directory"))
    assert [href for _, href in page.nav] == ["#" + s.anchor for s in page.sections]  # one list, read by both
    assert ("numerics", "#numerics") in page.nav and ("method", "#methods") in page.nav
    assert '<a href="#numerics">numerics</a>' in html_of_page(page)


def test_markdown_fits_a_job_summary(report: Report) -> None:
    text = render_markdown(report)
    assert "<svg" not in text and "![" not in text  # no chart files: no image links
    assert "### Which device is fast enough?" in text
    assert "| model | pixel8 | rpi5 | dead |" in text
    assert "**cnn**: **fastest** **pixel8** at" in text and "faster than **rpi5**" in text
    assert "| [cnn](#model-cnn) | " in text and "**baseline**" in text and "not run" in text
    linked = render_markdown(report, "charts")
    assert "![cnn: latency distribution per device](charts/cnn-latency.svg)" in linked


def test_json_has_the_numbers_and_no_svg(report: Report) -> None:
    data = json.loads(render_json(report))
    assert data["format"] == "etfarm-report/1" and data["baseline"] == "pixel8"
    cnn = data["models"][0]
    rpi5 = next(d for d in cnn["latency"] if d["device"] == "rpi5")
    model_rpi5 = next(d for d in report.models[0].latency if d.device == "rpi5")
    assert rpi5["ratio"] == model_rpi5.ratio and rpi5["ratio_ci"]["low"] == model_rpi5.ratio_ci.low
    assert cnn["charts"] == [] and data["llm"] == []  # etfarm-report/1's keys: charts are drawn for pages only
    assert "<svg" not in json.dumps(data)


def test_json_writes_a_number_that_is_not_finite_as_null(report: Report) -> None:
    cnn = report.models[0]  # a numerics metric or a spread can be infinite; JSON has no inf
    odd = replace(cnn, latency=(replace(cnn.latency[0], cv=math.inf, p90_over_p50=math.nan), *cnn.latency[1:]))
    first = json.loads(render_json(replace(report, models=(odd, *report.models[1:]))))["models"][0]["latency"][0]
    assert first["cv"] is None and first["p90_over_p50"] is None and first["p50_ms"] == cnn.latency[0].p50_ms


def test_csv_is_one_row_per_model_and_device(report: Report) -> None:
    rows = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [(r["model"], r["device"]) for r in rows] == [("cnn", "pixel8"), ("cnn", "rpi5"), ("mlp", "pixel8"),
                                                         ("mlp", "rpi5")]
    assert float(rows[1]["ratio"]) == pytest.approx(2.0, rel=0.05) and rows[0]["fastest"] == "True"


def test_a_run_where_every_device_failed_still_reports(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a", "b"), failed=("a", "b"))
    assert not (run / "stats.csv").exists()
    report = build_report(RunRecord(run))
    page = render_html(report)
    assert "no device produced a result" in page and "device unreachable" in page
    assert "no device produced a result" in render_markdown(report)
    assert render_csv(report).count("\n") == 1  # the header only


def test_html_and_markdown_say_the_same(report: Report) -> None:
    """One page, two renderers: every sentence, cell and heading of the page is in both outputs."""
    from html import unescape

    from markdown_it import MarkdownIt

    page = run_page(report)
    html_text = unescape(re.sub(r"<[^>]+>", "", html_of_page(page)))
    rendered = MarkdownIt("commonmark").enable("table").render(markdown_of_page(page))
    md_text = unescape(re.sub(r"<[^>]+>", "", rendered)).replace("⛔ ", "").replace("⚠ ", "")  # a badge's tone, in words
    from orchestrator.report.page.blocks import Bullets, Grid, Paragraph, Section, Table

    def texts(blocks: tuple) -> list[str]:
        out = []
        for block in blocks:
            if isinstance(block, Section):
                out += [plain(block.title), *texts(block.blocks)]
            elif isinstance(block, Paragraph):
                out.append(plain(block.body))
            elif isinstance(block, Bullets):
                out += [plain(item) for item in block.items]
            elif isinstance(block, Table):
                out += [*block.headers, *(plain(c) for row in block.rows for c in row)]
            elif isinstance(block, Grid):
                out += texts(block.blocks)
        return out

    for piece in texts(page.sections):
        assert " ".join(piece.split()) in " ".join(html_text.split()), piece
        assert " ".join(piece.split()) in " ".join(md_text.split()), piece


def test_delegation_coverage_and_left_out_configurations_in_every_format(report: Report) -> None:
    """What the delegate took and what it left outside, per model and device; a configuration left out with its
    reason (docs/guide/model-zoo.md); the JSON carries both for scripts."""
    from orchestrator.profiles.delegation import Coverage, OutsideOp

    found = replace(report, delegation=(Coverage("pixel8", "cnn", 6.0, 2.0, 0.75,
                                                 (OutsideOp("aten.gelu.default", 2, 1.5),
                                                  OutsideOp("aten.add.Tensor", 1, 0.5))),),
                    left_out=("cnn-int8-dynamic NOT EXPORTED: the host's reference run of 'cnn.py:build' failed: boom",))
    markdown, page = render_markdown(found), render_html(found)
    for text in ("Delegation coverage", "75.0%", "2.0000", "aten.gelu.default x2, aten.add.Tensor", "Left out",
                 "cnn-int8-dynamic NOT EXPORTED"):
        assert text in markdown and text in page, text
    data = json.loads(render_json(found))
    (entry,) = data["delegation"]
    assert (entry["device"], entry["delegated_share"], entry["outside"][0]) == (
        "pixel8", 0.75, {"op": "aten.gelu.default", "count": 2, "total_ms": 1.5})
    assert data["left_out"] == list(found.left_out)
    assert "Delegation coverage" not in render_markdown(replace(report, delegation=(), left_out=()))
