"""The LLM section of the reports (report/builders/llm.py, its page section page/llm.py, its chart render/charts.py)
and the printed summary (terminal/llm.py)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.profiles.stat_rows import StatRow
from orchestrator.report.builders.llm import llm_sections
from orchestrator.report.builders.report import build_job_report
from orchestrator.report.page.blocks import RunView, plain
from orchestrator.report.page.memory import memory_section
from orchestrator.report.page.sections import run_page
from orchestrator.report.render.charts import report_charts
from orchestrator.report.render.html import render_html
from orchestrator.report.render.markdown import render_markdown
from orchestrator.report.terminal.llm import llm_lines, phase_tables
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from tests.unit.store.test_llm_store import llm_run_dir


def phase_rows() -> list[StatRow]:
    execute = StatRow("local", "mlp", "Execute", 0, "Method::execute", 20, avg_ms=1.0, p50_ms=1.0, prefill_samples=4,
                      prefill_p50_ms=4.0, prefill_avg_ms=4.0, decode_samples=16, decode_p50_ms=0.5, decode_avg_ms=0.5)
    gemm = StatRow("local", "mlp", "Execute", 3, "<script>alert(1)</script>", 20, avg_ms=0.5, p50_ms=0.5,
                   module_path="layers.0|x", op_types="", prefill_samples=4, prefill_p50_ms=3.0, prefill_avg_ms=3.0,
                   decode_samples=16, decode_p50_ms=0.1, decode_avg_ms=0.1)
    return [execute, gemm]


def test_the_section_puts_devices_side_by_side_with_the_phases_and_a_step_chart(tmp_path: Path) -> None:
    job = load_manifest(llm_run_dir(tmp_path))
    (section,) = llm_sections(job, phase_rows(), ("local", "rpi5"))
    assert section.model == "mlp" and [d.device for d in section.devices] == ["local"]  # rpi5 did not generate
    (local,) = section.devices
    assert (local.ttft_ms, local.decode_tokens_per_s, local.step_ms) == (3.0, 2000.0, (0.5,) * 4)
    assert local.pss_decode_kb == 650 and local.verification == "pass"
    ops = {(o.phase, o.index): o for o in section.phase_ops}
    assert ops[("prefill", 3)].share == 0.75 and ops[("decode", 3)].share == 0.2

    report = build_job_report(RunRecord(tmp_path, job, phase_rows()))
    charts = report_charts(report)
    chart = charts.of("mlp", "decode-steps")
    assert chart is not None and "<svg" in chart.svg
    assert charts.all[-1] is chart  # written beside the Markdown with the models' charts
    html = render_html(run_page(report, charts))
    assert '<section id="llm">' in html and '<a href="#llm">LLMs</a>' in html and "2000" in html
    assert html.index('id="llm"') < html.index('id="memory"') < html.index('id="devices"')
    # an LLM page leads with time to first token and tokens/s (right after the answer), and each unit says what it
    # counts: a latency "execution" is one whole generation, an op's time is per forward call
    assert html.index('id="summary"') < html.index('id="llm"') < html.index('id="trust"') < html.index('id="model-mlp"')
    assert "an LLM&#x27;s execution: one whole generation" in html or "an LLM's execution: one whole generation" in html
    latency = charts.of("mlp", "latency")
    assert latency is not None and "ms per generation" in latency.svg
    groups = charts.of("mlp", "op-groups")
    assert groups is not None and "per forward call" in groups.svg and "per execution" not in groups.svg
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html  # names are escaped
    assert "LLMs (results/llm_figures.py)" in html  # how the figures were computed
    markdown = render_markdown(run_page(report, charts), "charts")
    markdown = markdown[markdown.index("### LLMs"):markdown.index("### Memory")]  # the page's one escaping rule
    assert "#### Model `mlp`" in markdown and "![mlp: per-step decode latency](charts/mlp-decode-steps.svg)" in markdown
    assert "<script>" not in markdown and r"\<script\>" in markdown and r"layers.0\|x" in markdown


def test_the_printed_summary(tmp_path: Path) -> None:
    job = load_manifest(llm_run_dir(tmp_path))
    (line,) = llm_lines(job)
    assert line.startswith("local mlp: LLM, 3-token prompt (1 prefill call), 5 tokens generated, 4 generations: "
                           "time to first token p50 3.0000 ms, prefill")
    assert "decode 2000 tokens/s (without ETDump 111 tokens/s)" in line and "after decode RSS 950.0 KiB / PSS" in line
    text = phase_tables(phase_rows())
    assert "model mlp on local: ops by phase" in text and "75.0%" in text and "20.0%" in text
    assert phase_tables([r for r in phase_rows() if r.event_name == "x"]) == ""


def test_the_memory_table_has_every_model_kind_with_pss(tmp_path: Path) -> None:
    job = load_manifest(llm_run_dir(tmp_path))
    report = build_job_report(RunRecord(tmp_path, job, phase_rows()))
    rows = {r.device: r for r in report.memory}
    assert (rows["local"].pss_load_kb, rows["local"].pss_kb, rows["local"].peak_rss_kb) == (402, 602, 900)
    assert rows["rpi5"].pss_kb is None  # a run recorded before PSS
    (table, _) = memory_section(RunView(report))[0].blocks
    assert [plain(c) for c in table.rows[-1]][1:5] == ["rpi5", "-", "-", "-"]
    html = render_html(run_page(report))
    assert '<section id="memory">' in html and "602.0 KiB" in html
    assert "### Memory" in render_markdown(run_page(report))


def test_the_ab_page_gives_the_llm_metric_verdicts_in_words_and_in_a_table() -> None:
    from orchestrator.report.builders.comparison import comparison_view
    from orchestrator.report.page.comparison import comparison_page
    from orchestrator.verdicts.compare import Comparison, Side, compare_sides
    from orchestrator.verdicts.sides import SideRun
    from orchestrator.verdicts.statistics import VerdictSettings
    from tests.unit.verdicts.test_llm_metrics import runs

    def side(step: float, ttft: float, seed: int) -> Side:
        return Side("r", "dev", "llm", tuple(SideRun(f"run-{k}", (ttft + 4 * step,) * 5, None, figures)
                                             for k, figures in enumerate(runs(step, ttft, seed=seed))))

    settings = VerdictSettings(resamples=500)
    pair = compare_sides(side(0.5, 2.0, 0), side(0.6, 1.0, 1), settings, per_op=False)
    page = comparison_page(comparison_view(Comparison("a", "b", settings, (pair,)), [], "A/B", None))
    markdown = render_markdown(page)
    answer = markdown[:markdown.index("| device | model | verdict")]
    assert "decode tokens/s **⛔ regressed**: 0.84x the baseline's \\[0.83, 0.84\\] (1989 -\\> 1664 tokens/s)" in answer
    assert "time to first token **improved**" in answer
    assert "| dev | llm | decode tokens/s (higher is better) | **⛔ regressed** | 0.8" in markdown
    assert "| dev | llm | time to first token (lower is better) | **improved** |" in markdown
    html = render_html(page)
    assert "LLMs: time to first token and decode tokens/s, B against A" in html
