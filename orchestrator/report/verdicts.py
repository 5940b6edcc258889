"""Verdict tables as text (terminal) and Markdown (CI job summaries, nightly reports).

Prints `verdicts.compare.Comparison` objects and computes nothing: every number and verdict is
already in them. Per-op rows are shown for ops that are not `unchanged`/`inconclusive` (the
regressions and improvements), so a table of hundreds of ops stays readable.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orchestrator.report.llm_text import metric_rows
from orchestrator.report.summary import format_table
from orchestrator.verdicts.changes import SeriesChanges
from orchestrator.verdicts.compare import Comparison, OpVerdict, PairVerdict
from orchestrator.verdicts.noise import COVERAGE, MIN_JOBS, WINDOW
from orchestrator.verdicts.statistics import Verdict, runs_for_significance

HEADERS = ["device", "model", "op", "verdict", "A p50 ms", "B p50 ms", "ratio", "CI", "p", "runs A/B", "noise floor"]
_NOTABLE = (Verdict.REGRESSED, Verdict.IMPROVED)


def verdict_rows(comparison: Comparison) -> list[list[object]]:
    rows: list[list[object]] = []
    for pair in comparison.pairs:
        rows.append(_pair_row(pair))
        rows += metric_rows(pair)  # an LLM's TTFT and decode tokens/s
        rows += [_op_row(pair, op) for op in pair.ops if op.verdict in _NOTABLE]
    return rows


def _pair_row(pair: PairVerdict) -> list[object]:
    verdict = pair.verdict.value.upper() if pair.verdict is Verdict.REGRESSED else pair.verdict.value
    if pair.verification_failed:
        verdict += " (outputs WRONG)"
    est = pair.estimate
    floor = pair.noise.describe() if pair.noise else None
    if est is None:
        return [pair.device, pair.model, "end to end", verdict, None, None, None, pair.reason or "-", None, None, floor]
    return [pair.device, pair.model, "end to end", verdict, est.median_a_ms, est.median_b_ms, _ratio(est.ratio),
            _ci(est.ci_low, est.ci_high), _p(est.p_value), f"{est.runs_a}/{est.runs_b}", floor]


def _op_row(pair: PairVerdict, op: OpVerdict) -> list[object]:
    est = op.estimate
    verdict = op.verdict.value.upper() if op.verdict is Verdict.REGRESSED else op.verdict.value
    return ["", "", f"{op.event_name} [{op.event_block}#{op.event_index}]", verdict, est.median_a_ms, est.median_b_ms,
            _ratio(est.ratio), _ci(est.ci_low, est.ci_high), _p(op.p_adjusted), f"{est.runs_a}/{est.runs_b}", None]


def _ratio(value: float) -> str:
    return f"{value:.3f}x"


def _ci(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


def _p(value: float) -> str:
    return f"{value:.3g}"


def verdict_table(comparison: Comparison) -> str:
    """The terminal table, with a one-line legend of the method and thresholds."""
    table = format_table(HEADERS, verdict_rows(comparison), "llllrrrlrrl")
    baselines = [f"{p.device} {p.model}: {p.source_a}" for p in comparison.pairs
                 if p.source_a and p.source_a not in comparison.a]
    return f"{table}\n{legend(comparison)}" + (f"\nbaselines: {'; '.join(baselines)}" if baselines else "")


def legend(comparison: Comparison) -> str:
    s = comparison.settings
    ops = sum(len(p.ops) for p in comparison.pairs)
    skipped = sum(p.ops_skipped for p in comparison.pairs)
    statistic = "fastest per-run median" if s.center == "fast" else "mean of per-run medians"
    tested = "the faster half of the per-run medians" if s.center == "fast" else "per-run medians"
    return (f"B = {comparison.b} against A = {comparison.a}; ratio B/A of the {statistic}, {s.confidence:.0%} CI by "
            f"hierarchical bootstrap over process runs, p from Mann-Whitney U on {tested} "
            f"(Benjamini-Hochberg across {ops} ops; {skipped} skipped: unmatched or too fast to time); "
            f"thresholds {s.threshold:.0%} end to end, {s.op_threshold:.0%} per op"
            + (f", noise floor {s.noise_floor:.0%}" if s.noise_floor else "") + _auto_legend(s.auto_noise_floor)
            + _too_few_runs(comparison))


def _too_few_runs(comparison: Comparison) -> str:
    """Say it when a side has too few runs for the rank test ever to be significant: its verdicts can
    only be unchanged or inconclusive, whatever the ratio."""
    s = comparison.settings
    needed = runs_for_significance(s.center, s.alpha)
    short = sorted({p.device for p in comparison.pairs
                    if p.estimate is not None and min(p.estimate.runs_a, p.estimate.runs_b) < needed})
    if not short:
        return ""
    return (f"; TOO FEW RUNS on {', '.join(short)}: with center {s.center} a side needs at least {needed} process "
            f"runs before the rank test can reach p < {s.alpha:g}, so nothing there can be called regressed or improved")


def _auto_legend(auto: bool) -> str:
    if not auto:
        return ""
    return (f"; noise floor per device and model from stored history (raises the bar for regressed/improved, not for "
            f"unchanged): the {COVERAGE:.0%} "
            f"bound of the ratio between consecutive good stored runs (MAD of log steps, newest {WINDOW}, "
            f"none below {MIN_JOBS})")


def verdict_markdown(comparison: Comparison, title: str | None = None, notes: Sequence[str] = ()) -> str:
    """A Markdown table (GitHub flavoured) of the same rows, with the legend and any notes."""
    rows = verdict_rows(comparison)
    def cell(value: object) -> str:
        text = "-" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)
        return text.replace("|", "\\|")
    lines = [f"# {title}", ""] if title else []
    lines += ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    lines += ["", legend(comparison)]
    lines += ["", *(f"- {note}" for note in notes)] if notes else []
    return "\n".join(lines) + "\n"


def write_verdict_report(comparison: Comparison, directory: Path, name: str, title: str,
                         notes: Sequence[str] = ()) -> list[Path]:
    """`<name>.md` and `<name>.json` in `directory`, and `latest.md` pointing people at the newest."""
    import json

    from orchestrator.cache import write_json_atomic

    directory.mkdir(parents=True, exist_ok=True)
    markdown = verdict_markdown(comparison, title, notes)
    written = []
    for target in (directory / f"{name}.md", directory / "latest.md"):
        tmp = target.with_suffix(".md.tmp")
        tmp.write_text(markdown, encoding="utf-8")
        tmp.replace(target)
        written.append(target)
    write_json_atomic(directory / f"{name}.json", json.loads(json.dumps(comparison.to_dict())))
    written.append(directory / f"{name}.json")
    return written


def changes_table(found: Sequence[SeriesChanges]) -> str:
    """One row per change point: where a (device, model)'s end-to-end p50 shifted, and which run began it."""
    rows = [[c.device, c.model, c.run_id, c.started, c.git_commit or "-", c.before_ms, c.after_ms, _ratio(c.ratio)]
            for s in found for c in s.changes]
    quiet = [f"{s.device} {s.model} ({s.points} runs)" for s in found if not s.changes]
    out = [format_table(["device", "model", "first run", "started", "commit", "before ms", "after ms", "ratio"], rows,
                        "lllllrrr")] if rows else ["no change points found"]
    if quiet:
        out.append("no shift in: " + ", ".join(quiet))
    out.append("method: ruptures PELT (l2 cost) on log end-to-end p50 per run, penalty 5 sigma^2 ln(n) from the "
               "series' noise; shifts under 5 % not reported")
    return "\n".join(out)
