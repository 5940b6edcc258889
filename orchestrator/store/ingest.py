"""A run directory read into typed rows for the store: the results model plus every event.

Sources of truth, in order: `manifest.json` through `load_manifest` (never dict paths); each
(device, model)'s ETDumps (`run-k/etdump.etdp`), merged and summarised exactly as `stats.csv`
was (`analysis_core.collect_samples` + `summary_records`, Inspector's statistics), with the raw
samples of every event kept per process run; `stats.csv` fills in what the ETDumps cannot give
(an ETRecord deleted from the cache: op types and module paths; ETDumps deleted: the statistics
alone, with no raw samples). numpy only: importing a run never imports pandas or torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.errors import AnalysisError
from orchestrator.profiles.analysis_core import collect_samples, summary_records
from orchestrator.profiles.stat_rows import StatRow, read_stats_csv
from orchestrator.run.results import Job, ModelResult, load_manifest
from orchestrator.run.rundir import STATS
from orchestrator.run.runner_contract import ETDUMP_NAME
from orchestrator.store.rows import META_FIELDS, STAT_FIELDS, EventRow


@dataclass(frozen=True)
class RunRecord:
    """Everything the store keeps of one run directory."""

    job: Job
    run_dir: Path
    events: tuple[EventRow, ...]
    sample_runs: Mapping[tuple[str, str], tuple[str, ...]]  # (device, model) -> labels of the ETDumps read


def read_run(run_dir: Path) -> RunRecord:
    run_dir = run_dir.resolve()
    job = load_manifest(run_dir)
    csv_rows = {(r.device, r.model, r.event_block, r.event_index): r for r in read_stats_csv(run_dir / STATS)}
    events: list[EventRow] = []
    sample_runs: dict[tuple[str, str], tuple[str, ...]] = {}
    for device, model in job.results():
        artifacts = job.model_artifacts(model.name)
        etrecord = Path(artifacts.etrecord) if artifacts and artifacts.etrecord else None
        labels, rows = _model_events(run_dir, device.name, model, etrecord, csv_rows)
        sample_runs[(device.name, model.name)] = labels
        events.extend(rows)
    return RunRecord(job, run_dir, tuple(events), sample_runs)


def _model_events(run_dir: Path, device: str, model: ModelResult, etrecord: Path | None,
                  csv_rows: Mapping[tuple[str, str, str, int], StatRow]) -> tuple[tuple[str, ...], list[EventRow]]:
    dumps = [(r.label, run_dir / device / model.name / r.label / ETDUMP_NAME) for r in model.traced_runs]
    dumps = [(label, path) for label, path in dumps if path.is_file()]
    labels = tuple(label for label, _ in dumps)
    from_csv = {k: v for k, v in csv_rows.items() if k[0] == device and k[1] == model.name}
    if dumps:
        try:
            samples = collect_samples([p for _, p in dumps], etrecord if etrecord and etrecord.is_file() else None,
                                      run_labels=list(range(len(dumps))))
        except AnalysisError:
            samples = None
        if samples is not None:
            return labels, _from_samples(device, model.name, samples, len(labels), from_csv)
    return (), [_from_csv_row(device, model.name, row) for row in from_csv.values()]


def _from_samples(device: str, model: str, samples: Any, nruns: int,
                  from_csv: Mapping[tuple[str, str, str, int], StatRow]) -> list[EventRow]:
    width = max((len(e) for e in samples.block_events), default=0) + 1
    keys = samples.block.astype(np.int64) * width + samples.event_index
    order = np.lexsort((samples.run, keys))  # by event, then run; stable, so iterations stay in order
    sorted_keys = keys[order]
    sorted_runs = samples.run[order].astype(np.int64)
    values = samples.duration_ms[order].astype(np.float64)
    starts = np.searchsorted(sorted_keys, np.unique(sorted_keys))
    ends = np.append(starts[1:], len(sorted_keys))
    by_key = {int(sorted_keys[s]): (s, e) for s, e in zip(starts, ends, strict=False)}
    rows = []
    for record in summary_records(samples):
        block = samples.block_keys.index(record["event_block"])
        s, e = by_key[block * width + int(record["event_index"])]
        csv_row = from_csv.get((device, model, record["event_block"], int(record["event_index"])))
        meta = {f: _text(record.get(f, getattr(csv_row, f, None))) for f in META_FIELDS}
        meta = {f: (v if v is not None else _text(getattr(csv_row, f, None))) for f, v in meta.items()}
        rows.append(EventRow(
            device=device, model=model, event_block=record["event_block"], event_index=int(record["event_index"]),
            event_name=record["event_name"], samples=int(record["samples"]),
            stats={f: _number(record.get(f)) for f in STAT_FIELDS}, is_delegated_op=bool(record["is_delegated_op"]),
            meta=meta, samples_ms=values[s:e].copy(),
            run_counts=np.bincount(sorted_runs[s:e], minlength=nruns).astype(np.int64)))
    return rows


def _from_csv_row(device: str, model: str, row: StatRow) -> EventRow:
    return EventRow(device=device, model=model, event_block=row.event_block, event_index=row.event_index,
                    event_name=row.event_name, samples=row.samples, stats={f: getattr(row, f) for f in STAT_FIELDS},
                    is_delegated_op=row.is_delegated_op, meta={f: _text(getattr(row, f)) for f in META_FIELDS})


def _number(value: Any) -> float | None:
    if value is None or value == "":
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return None
    return str(value)
