"""A test report as JUnit XML (the schema CI test reporters read: testsuites > testsuite > testcase, with
`<failure>` and `<skipped>`, and `<properties>` on suites and cases). Written by xml.etree: its own escaping, so
any device, model or op name reads back exactly. Format only: report/builders/junit.py decided every outcome."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from orchestrator.report.model.junit import Case, Outcome, Suite, TestReport


def render_junit(report: TestReport) -> str:
    root = ET.Element("testsuites", name=report.name, **_counts(report.suites))
    for suite in report.suites:
        element = ET.SubElement(root, "testsuite", name=suite.name, **_counts([suite]))
        _properties(element, suite.properties)
        for case in suite.cases:
            _case(element, case)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _counts(suites: Sequence[Suite]) -> dict[str, str]:
    return {"tests": str(sum(len(s.cases) for s in suites)), "failures": str(sum(s.count(Outcome.FAILED) for s in suites)),
            "errors": "0", "skipped": str(sum(s.count(Outcome.SKIPPED) for s in suites)), "time": "0"}


def _case(parent: ET.Element, case: Case) -> None:
    element = ET.SubElement(parent, "testcase", name=case.name, classname=case.classname, time="0")
    _properties(element, case.properties)
    if case.outcome is Outcome.FAILED:
        failure = ET.SubElement(element, "failure", message=case.message, type=case.kind)
        failure.text = case.detail or case.message
    elif case.outcome is Outcome.SKIPPED:
        ET.SubElement(element, "skipped", message=f"{case.kind}: {case.message}" if case.message else case.kind)


def _properties(parent: ET.Element, properties: Sequence[tuple[str, str]]) -> None:
    if not properties:
        return
    element = ET.SubElement(parent, "properties")
    for name, value in properties:
        ET.SubElement(element, "property", name=name, value=value)
