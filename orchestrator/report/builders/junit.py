"""A comparison's verdicts as a test report (report/model/junit.py): what fails, what passes, what was not judged.

Failed: a regression (end to end, in an op, in an LLM metric or against the series), B's wrong outputs, an accuracy
drop. Skipped: what could not be judged (no data, no baseline yet, inconclusive, settings differ). The rest passed.
Each (device, model) case carries its verdict, ratio, interval, p-value and threshold as properties; each op that
regressed is a failed case of its own. Read through the verdicts' data objects only.
"""

from __future__ import annotations

from orchestrator.report.model.junit import Case, Outcome, Suite, TestReport
from orchestrator.verdicts.compare import Comparison, OpVerdict, PairVerdict
from orchestrator.verdicts.statistics import Estimate, Verdict

_NOT_JUDGED = {Verdict.NO_DATA: "no-data", Verdict.NEW: "new", Verdict.INCONCLUSIVE: "inconclusive",
               Verdict.SETTINGS_DIFFER: "settings-differ"}


def junit_report(comparison: Comparison, name: str) -> TestReport:
    devices = list(dict.fromkeys(p.device for p in comparison.pairs))
    suites = tuple(Suite(device, tuple(case for p in comparison.pairs if p.device == device for case in _cases(p)),
                         (("a", comparison.a), ("b", comparison.b)))
                   for device in devices)
    return TestReport(name, suites)


def _cases(pair: PairVerdict) -> list[Case]:
    classname = f"etfarm.{pair.device}"
    props = (("verdict", pair.verdict.value), *_estimate(pair.estimate), ("threshold", f"{pair.threshold:.4g}"),
             ("op_threshold", f"{pair.op_threshold:.4g}"))
    cases = [_pair_case(pair, classname, props)]
    cases += [_op_case(pair, op, classname) for op in pair.regressed_ops]
    return cases


def _pair_case(pair: PairVerdict, classname: str, props: tuple[tuple[str, str], ...]) -> Case:
    said = _said(pair.verdict.value, pair.estimate)
    if pair.regressed:
        return Case(pair.model, classname, Outcome.FAILED, "regressed", said, _regressed_detail(pair), props)
    if pair.verification_failed:
        return Case(pair.model, classname, Outcome.FAILED, "wrong-results", "B's outputs do not match the reference",
                    "", props)
    if pair.accuracy_dropped and pair.accuracy is not None:
        return Case(pair.model, classname, Outcome.FAILED, "accuracy-dropped", pair.accuracy.reason, "", props)
    if pair.verdict in _NOT_JUDGED:
        return Case(pair.model, classname, Outcome.SKIPPED, _NOT_JUDGED[pair.verdict], pair.reason or said, "", props)
    return Case(pair.model, classname, Outcome.PASSED, properties=props)


def _op_case(pair: PairVerdict, op: OpVerdict, classname: str) -> Case:
    name = op.op or op.event_name
    props = (("verdict", op.verdict.value), *_estimate(op.estimate), ("p_adjusted", f"{op.p_adjusted:.3g}"),
             ("event", f"{op.event_block}/{op.event_index} {op.event_name}"))
    where = f" ({op.module_path})" if op.module_path else ""
    return Case(f"{pair.model}: {name}", classname, Outcome.FAILED, "regressed", _said("op regressed", op.estimate),
                f"{name}{where} {op.source_line}".strip(), props)


def _estimate(estimate: Estimate | None) -> tuple[tuple[str, str], ...]:
    if estimate is None:
        return ()
    return (("ratio", f"{estimate.ratio:.4f}"), ("interval", f"[{estimate.ci_low:.4f}, {estimate.ci_high:.4f}]"),
            ("p_value", f"{estimate.p_value:.3g}"), ("runs_a", str(estimate.runs_a)), ("runs_b", str(estimate.runs_b)))


def _said(what: str, estimate: Estimate | None) -> str:
    if estimate is None:
        return what
    return f"{what} {estimate.ratio_and_interval}"


def _regressed_detail(pair: PairVerdict) -> str:
    parts = []
    if pair.verdict is Verdict.REGRESSED:
        parts.append(f"end to end: {_said('regressed', pair.estimate)}")
    parts += [f"op {o.op or o.event_name}: {_said('regressed', o.estimate)}" for o in pair.regressed_ops]
    parts += [f"{m.metric}: regressed" for m in pair.metrics if m.verdict is Verdict.REGRESSED]
    if pair.series is not None and pair.series.regressed:
        parts.append("against its series' reference: regressed")
    return "\n".join(parts)
