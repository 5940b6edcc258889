"""Sections other packages add to a run's report (an LLM's generation figures, ...): the one hook.

`SECTIONS` names functions `(job, report) -> Sequence[page.Section]` as "module:function"; each
is imported when a report is built and its sections go after the model sections, in both the
HTML page and the Markdown summary (they are page blocks: both renderers write them out and
escape their text). A function that fails leaves the report without its sections and logs why:
a report never fails for an optional section.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orchestrator.report.model import Report
    from orchestrator.report.page import Section
    from orchestrator.run.results import Job

log = logging.getLogger(__name__)

SECTIONS: tuple[str, ...] = ()


def extra_sections(job: Job, report: Report) -> tuple[Section, ...]:
    out: list[Section] = []
    for name in SECTIONS:
        module, _, function = name.partition(":")
        try:
            out.extend(getattr(importlib.import_module(module), function)(job, report))
        except Exception as exc:  # noqa: BLE001 - an optional section must not cost the report
            log.warning("report section %s left out: %s: %s", name, type(exc).__name__, exc)
    return tuple(out)
