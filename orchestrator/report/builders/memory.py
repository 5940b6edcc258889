"""The report's memory rows: per model and device, peak RSS, PSS, planned memory and the program's size.

Every model kind (LLMs add their memory after prefill and decode in their own section). Figures
come from the results model: the highest peak RSS and PSS over the process runs (PSS after the
method load and after the measured executions: the process's share of the pages it maps, what
Android's accounting and ExecuTorch's benchmark apps report), MethodMeta's planned buffers and
the .pte's size on the device. Computed here (`memory_rows`); report/page/memory.py is its page section.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.report.model import MemoryRow
from orchestrator.results.model import Job


def memory_rows(job: Job, devices: Sequence[str]) -> tuple[MemoryRow, ...]:
    """A row per (model, device) with runs, models in the job's order, devices in the report's."""
    out = []
    for name in dict.fromkeys(m.name for _, m in job.results()):
        for device_name in devices:
            device = job.device(device_name)
            model = device.model(name) if device else None
            if model is None or not model.runs:
                continue
            pss_load = [r.pss_load_kb for r in model.runs if r.pss_load_kb is not None]
            out.append(MemoryRow(name, device_name, model.peak_rss_kb, max(pss_load) if pss_load else None,
                                 model.pss_kb, model.planned_memory_bytes, model.program_bytes, model.memory,
                                 model.energy))
    return tuple(out)
