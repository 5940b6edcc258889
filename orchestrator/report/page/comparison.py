"""The A/B page: verdicts first, wherever a comparison was made (a night, `compare A B --html`, `report B --against A`).

It opens with the verdicts per (device, model): the verdict, the ratio B/A with its interval, the
statistic it compares (named after it: `mean run median` or, under `center: fast`, `fastest run
median`), the noise floor, the baseline run (linked when it has a page) and, for a night, whether
a regression was confirmed by the run that repeated it. Then the per-op verdicts, naming the
user's layers; the structure diff (ops added, removed or whose count changed); what to trust in
both runs; then B's run reports (a night's jobs, the confirmation folded in).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from orchestrator.profiles.source import telling_source_lines
from orchestrator.report.builders.trust import WORRYING, trust_summary
from orchestrator.report.formats import clip, fmt_ms, fmt_rate, interval, ratio
from orchestrator.report.model import ComparisonView, Interval, PairStructure, Report
from orchestrator.report.page.blocks import (
    NO_CHARTS,
    Block,
    Bullets,
    Charts,
    Page,
    Paragraph,
    RunView,
    Section,
    Span,
    Table,
    Text,
    anchor,
    badge,
    code,
    joined,
    link,
    muted,
    strong,
    text,
    verdict_badge,
)
from orchestrator.report.page.closing import methods_section
from orchestrator.report.page.run import flag_badge
from orchestrator.report.page.sections import run_sections
from orchestrator.report.page.structure import model_diff_lines
from orchestrator.report.terminal.verdicts import legend
from orchestrator.verdicts.compare import OpVerdict, PairVerdict
from orchestrator.verdicts.figures import p50s
from orchestrator.verdicts.llm_metrics import MetricVerdict
from orchestrator.verdicts.statistics import Verdict

_NOTABLE = (Verdict.REGRESSED, Verdict.IMPROVED, Verdict.SETTINGS_DIFFER)
VERDICT_METHODS = (
    "Verdicts (orchestrator/verdicts/statistics.py): the ratio B/A of each side's statistic over its per-process-run "
    "medians, its 95 % interval by hierarchical bootstrap over process runs, the p-value of a Mann-Whitney U test on "
    "the per-run medians (Benjamini-Hochberg across ops). regressed / improved: significant AND the whole interval "
    "beyond the threshold (raised to the noise floor); unchanged: the whole interval within the threshold; "
    "inconclusive: anything else. settings-differ: A and B ran with different settings (backend, iterations, "
    "warmup, threads): their ratio is the settings', never a regression.",
    "Structure: per op group (an event's name without its #k), the number of events each run's stats.csv holds, and "
    "the modules its ops sit in.",
)


def comparison_page(view: ComparisonView, charts: Mapping[str, Charts] | None = None) -> Page:
    """The A/B page; `charts`: each of B's runs' charts by run id (render/charts.py), none for a page without."""
    c = view.comparison
    s = c.settings
    meta = text("B ", code(c.b), " against A ", code(c.a), f" · center {s.center} · thresholds {s.threshold:.0%} end "
                f"to end, {s.op_threshold:.0%} per op" + (" · noise floor from stored history" if s.auto_noise_floor
                                                          else f" · noise floor {s.noise_floor:.0%}" if s.noise_floor
                                                          else ""))
    runs = tuple(section for report in view.runs
                 for section in _run_sections(report, (charts or {}).get(report.run_id, NO_CHARTS)))
    methods = (*VERDICT_METHODS, *(view.runs[0].methods if view.runs else ()))
    versions = view.runs[0].versions if view.runs else ()
    sections = (verdicts_section(view), op_verdicts_section(view), structure_section(view), trust_section(view),
                *runs, methods_section(methods, versions))
    return Page(view.title, meta, sections)


def _run_sections(report: Report, charts: Charts) -> tuple[Section, ...]:
    """One of B's runs, its sections under anchors and titles of their own; the navigation lists the run once,
    at its answer (the first section)."""
    sections = run_sections(RunView(report, charts, prefix=anchor("run", report.run_id) + "-",
                                    label=f" · run {report.run_id}"))
    return tuple(replace(s, nav=f"run {report.run_id}" if k == 0 else "") for k, s in enumerate(sections))


def verdicts_section(view: ComparisonView) -> Section:
    c = view.comparison
    rows = tuple(_verdict_row(view, p) for p in c.pairs)
    # each side's p50 of its clean executions (issue 37 item 6); the ratio is the judging statistic's (the legend)
    headers = ("device", "model", "verdict", "ratio B/A", "95% CI", "A p50 ms", "B p50 ms", "p", "runs A/B",
               "noise floor", "baseline run", "confirmed")
    blocks: list[Block] = [
        Paragraph(joined([pair_sentence(view, p) for p in c.pairs], " "), tone="answer"),
        Table(headers, rows, (False, False, False, True, True, True, True, True, True, False, False, False)),
        *metrics_table(c.pairs),
        Paragraph(text(muted(legend(c)))),
    ]
    if view.notes:
        blocks.append(Bullets(tuple(text(n) for n in view.notes)))
    return Section(text("Verdicts"), "verdicts", tuple(blocks), nav="verdicts")


def pair_sentence(view: ComparisonView, pair: PairVerdict) -> Text:
    name = strong(f"{pair.device} {pair.model}")
    verdict = verdict_badge(pair.verdict.value, pair.reason or "")
    est = pair.estimate
    if pair.verdict is Verdict.NEW:
        return text(name, ": ", verdict, " no baseline yet: this run becomes it.")
    if est is None:
        return text(name, ": ", verdict, f" {pair.reason or 'no data'}.")
    ci = Interval(est.ci_low, est.ci_high, view.comparison.settings.confidence)
    how = {Verdict.REGRESSED: "slower than", Verdict.IMPROVED: "the time of"}.get(pair.verdict, "the time of")
    size = f"{ratio(est.ratio)} {how} "
    confirmation = view.confirmation(pair.device, pair.model_b)
    confirmed: Text = ()
    if confirmation is not None:
        confirmed = text("; ", strong("confirmed") if confirmation.confirmed else strong("NOT confirmed"),
                         " by run ", code(confirmation.confirm_run))
    a_p50, b_p50 = p50s(pair.figures)
    return text(name, ": ", verdict, " ", size, "baseline ", _baseline(view, pair), f" {interval(ci)} (p50 "
                f"{fmt_ms(a_p50)} -> {fmt_ms(b_p50)} ms, p {est.p_value:.3g}, "
                f"{est.runs_a}/{est.runs_b} runs)",
                *(text("; ", metric_clause(m, ci.level)) for m in pair.metrics), confirmed, _unlike_clause(pair),
                _accuracy_clause(pair), ".")


def _accuracy_clause(pair: PairVerdict) -> Text:
    """A quantized configuration's accuracy against the baseline's (verdicts/accuracy.py), judged on its own."""
    if pair.accuracy is None:
        return text()
    if pair.accuracy.dropped:
        return text("; ", badge("accuracy dropped", "bad", pair.accuracy.reason), f": {pair.accuracy.reason}")
    return text(f"; {pair.accuracy.reason}")


def _unlike_clause(pair: PairVerdict) -> Text:
    """What this pair does not compare like with like, in words ('' when nothing)."""
    parts = ([f"settings differ: {', '.join(d.describe() for d in pair.differences)}"] if pair.differences else [])
    parts += [f"incomplete {i.describe()}" for i in pair.incomplete]
    parts += [pair.below.describe()] if pair.below else []
    parts += [f"states may differ: {pair.estimate.state_note}"] if pair.estimate and pair.estimate.state_note else []
    parts += [f"series: {pair.series.describe()}"] if pair.series is not None else []
    return text(*(f"; {part}" for part in parts))


def metric_clause(m: MetricVerdict, level: float) -> Text:
    """An LLM metric's verdict in words: "decode tokens/s regressed: 0.52x the baseline's [0.49, 0.55] (812 -> 420)"."""
    a, b = (fmt_rate(m.value_a), fmt_rate(m.value_b)) if m.higher_is_better else (fmt_ms(m.value_a), fmt_ms(m.value_b))
    return text(m.label, " ", verdict_badge(m.verdict.value),
                f": {ratio(m.ratio)} the baseline's {interval(Interval(m.ci_low, m.ci_high, level))} ({a} -> {b} {m.unit})")


def metrics_table(pairs: Sequence[PairVerdict]) -> tuple[Block, ...]:
    """An LLM's verdicts on time to first token and decode tokens/s (verdicts/llm_metrics.py); () for other models."""
    rows = tuple((text(p.device), text(p.model), text(f"{m.label} ({'higher' if m.higher_is_better else 'lower'} is "
                                                      "better)"),
                  text(verdict_badge(m.verdict.value)), text(f"{m.ratio:.3f}x"),
                  text(f"[{m.ci_low:.3f}, {m.ci_high:.3f}]"),
                  text(fmt_rate(m.value_a) if m.higher_is_better else fmt_ms(m.value_a)),
                  text(fmt_rate(m.value_b) if m.higher_is_better else fmt_ms(m.value_b)), text(m.unit),
                  text(f"{m.estimate.p_value:.3g}"), text(f"{m.estimate.runs_a}/{m.estimate.runs_b}"))
                 for p in pairs for m in p.metrics)
    if not rows:
        return ()
    return (Table(("device", "model", "LLM metric", "verdict", "ratio B/A", "95% CI", "A", "B", "unit", "p", "runs A/B"),
                  rows, (False, False, False, False, True, True, True, True, False, True, True),
                  caption=text("LLMs: time to first token and decode tokens/s, B against A (a rate's ratio below 1: "
                               "B is slower; a regressed metric makes the pair regressed)")),)


def _baseline(view: ComparisonView, pair: PairVerdict) -> Span:
    href = view.href(pair.device, pair.model)
    return link(pair.source_a, href) if href else code(pair.source_a or "-")


def _verdict_row(view: ComparisonView, pair: PairVerdict) -> tuple[Text, ...]:
    est = pair.estimate
    confirmation = view.confirmation(pair.device, pair.model_b)
    confirmed = text("-") if confirmation is None else text(Span(
        "confirmed" if confirmation.confirmed else "NOT confirmed", title=f"by run {confirmation.confirm_run}"))
    verdict = text(verdict_badge(pair.verdict.value, pair.reason or ""),
                   " (outputs WRONG)" if pair.verification_failed else "",
                   *((" ", badge("accuracy dropped", "bad", pair.accuracy.reason)) if pair.accuracy_dropped else ()))
    figures: tuple[Text, ...] = (text("-"),) * 6
    if est is not None:
        a_p50, b_p50 = p50s(pair.figures)
        figures = (text(f"{est.ratio:.3f}x"), text(f"[{est.ci_low:.3f}, {est.ci_high:.3f}]"), text(fmt_ms(a_p50)),
                   text(fmt_ms(b_p50)), text(f"{est.p_value:.3g}"), text(f"{est.runs_a}/{est.runs_b}"))
    return (text(pair.device), text(pair.model), verdict, *figures,
            text(pair.noise.describe() if pair.noise else "-"), text(_baseline(view, pair)), confirmed)


def op_verdicts_section(view: ComparisonView) -> Section:
    """Every compared op, each with its verdict, ratio and interval, the one that moved most first (inconclusive and
    unchanged ones too: a page where every op moved 1.3x-2x but none beyond its threshold shows that)."""
    c = view.comparison
    ops = sorted(((p, o) for p in c.pairs for o in p.ops), key=lambda po: -abs(math.log(po[1].estimate.ratio))
                 if po[1].estimate.ratio > 0 else 0.0)
    notable = sum(o.verdict in _NOTABLE for _, o in ops)
    skipped = sum(p.ops_skipped for p in c.pairs)
    summary = (f"{notable} of {len(ops)} ops regressed or improved beyond the per-op threshold "
               f"({c.settings.op_threshold:.0%}) or ran with other settings; every op is listed, the one that moved "
               f"most first; {skipped} skipped (unmatched, or too fast for the timer).")
    if not ops:
        return Section(text("Per-op verdicts"), "op-verdicts", (Paragraph(text(
            f"No op compared ({skipped} skipped: unmatched, or too fast for the timer).")),), nav="per op")
    if not telling_source_lines(o.source_line for _, o in ops):  # one line for every op tells no layer apart
        ops = [(p, replace(o, source_line="")) for p, o in ops]
    rows = tuple((text(p.device), text(p.model), _op_name(o), _where(o),
                  text(verdict_badge(o.verdict.value)), text(f"{o.estimate.ratio:.3f}x"),
                  text(_ci_text(o.estimate.ci_low, o.estimate.ci_high)), text(f"{o.p_adjusted:.3g}"))
                 for p, o in ops)
    return Section(text("Per-op verdicts"), "op-verdicts", (
        Paragraph(text(summary)),
        Table(("device", "model", "op", "in your model", "verdict", "ratio B/A", "95% CI", "p (adjusted)"), rows,
              (False, False, False, False, False, True, True, True)),
    ), nav="per op")


def _ci_text(low: float, high: float) -> str:
    """An op's interval, "-" when it has none (too few distinct samples to resample: NaN)."""
    return f"[{low:.3f}, {high:.3f}]" if math.isfinite(low) and math.isfinite(high) else "-"


def _op_name(op: OpVerdict) -> Text:
    """The op as your model knows it (what A and B were joined by), B's kernel name beside it."""
    if not op.op or op.op == op.event_name:
        return text(Span(clip(op.event_name, 48), title=op.event_name))
    return joined([text(op.op), text(muted(op.event_name))], " · ")


def _where(op: OpVerdict) -> Text:
    if not op.module_path and not op.source_line:
        return text(muted("-"))
    return joined([t for t in (text(code(op.module_path)) if op.module_path else (),
                               text(muted(op.source_line)) if op.source_line else ()) if t], " · ")


def structure_section(view: ComparisonView) -> Section:
    rows = []
    lines: list[Text] = []
    for s in view.structure:
        rows += [(text(s.device), text(s.model), text(ch.group), text(str(ch.count_a)), text(str(ch.count_b)),
                  text(_change(ch.count_a, ch.count_b))) for ch in s.changes]
        lines += [*_module_lines(s), *model_diff_lines(s)]
    unknown = [f"{s.device} {s.model}" for s in view.structure if not s.known]
    blocks: list[Block] = []
    if rows:
        blocks.append(Table(("device", "model", "op group", "baseline", "this run", "change"), tuple(rows),
                            (False, False, False, True, True, True)))
    elif any(s.model_diff is not None and not s.model_diff.same for s in view.structure):
        blocks.append(Paragraph(text("The same op groups ran in both runs, but the model changed:")))
    elif len(unknown) < len(view.structure):  # "same" only where the ops were compared
        blocks.append(Paragraph(text("Same ops in both runs: no op group was added, removed or changed its count.")))
    if lines:
        blocks.append(Bullets(tuple(lines)))
    if unknown:
        blocks.append(Paragraph(text(muted(f"No per-op statistics to compare for {', '.join(unknown)}."))))
    return Section(text("What changed in the model"), "structure", tuple(blocks), nav="structure")


def _change(a: int, b: int) -> str:
    return "added" if a == 0 else "removed" if b == 0 else f"{b - a:+d} ({b / a:.2f}x)"


def _module_lines(s: PairStructure) -> list[Text]:
    out = []
    if s.modules_a != s.modules_b:
        out.append(text(strong(f"{s.device} {s.model}"), f": ops in {s.modules_b} modules (baseline {s.modules_a})"))
    if s.modules_added:
        out.append(text(strong(f"{s.device} {s.model}"), ": new modules ", joined([text(code(m)) for m in s.modules_added]),
                        " …" if s.modules_b - s.modules_a > len(s.modules_added) else ""))
    if s.modules_removed:
        out.append(text(strong(f"{s.device} {s.model}"), ": modules gone ",
                        joined([text(code(m)) for m in s.modules_removed])))
    return out


def trust_section(view: ComparisonView) -> Section:
    items = tuple(text(muted(f"({run}) "), strong(n.device), f" {n.model}: ", flag_badge(n.kind, "") if n.kind in
                       WORRYING else muted(n.kind), " ", n.text) for run, n in view.trust)
    summary = trust_summary([n for _, n in view.trust], "process run of either side")
    if summary is not None:
        items = (text(summary), *items)
    return Section(text("What to trust"), "trust", (Bullets(items, tone="flags"),), nav="trust")
