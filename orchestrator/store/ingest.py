"""A job read into typed rows for the store: the results model plus every event, with its raw samples.

`job_record(job, run_dir, stats)` is what `etfarm run` records: the job's statistics and the samples
they came from, in memory (profiles/stat_rows.py `ModelStats`), so no ETDump is read again.
`read_run(run)` (`etfarm store import DIR`) is the same from the run's record (results/record.py
`RunRecord`): the manifest, stats.csv's rows and the samples the job wrote beside them
(results/samples.py). Either way the samples kept are those of clean executions (`ModelStats.kept`,
the finisher's rule). A (device, model) with no samples at hand (a run directory written before the
samples file, or a model whose analysis failed) is read from its ETDumps (`run-k/etdump.etdp`),
merged and summarised exactly as `stats.csv` was (`analysis_core.collect_samples` + `summary_records`,
Inspector's statistics). stats.csv's rows fill in what the samples cannot give (op types and module
paths, which the ETRecord gave; ETDumps deleted: the statistics alone, with no raw samples). numpy
only: importing a run never imports pandas or torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.analysis_core import SampleSet, collect_samples, summary_records
from orchestrator.profiles.stat_rows import ModelStats, StatRow
from orchestrator.results.model import Job, ModelResult
from orchestrator.results.record import RunRecord
from orchestrator.run.clean_stats import clean_samples
from orchestrator.run.runner_contract import ETDUMP_NAME
from orchestrator.store.rows import META_FIELDS, STAT_FIELDS, EventRow

RowsByKey = Mapping[tuple[str, int], StatRow]  # (event_block, event_index) -> stats.csv's row


@dataclass(frozen=True)
class JobRecord:
    """Everything the store keeps of one run directory."""

    job: Job
    run_dir: Path
    events: tuple[EventRow, ...]
    sample_runs: Mapping[tuple[str, str], tuple[str, ...]]  # (device, model) -> labels of the ETDumps read


def read_run(run: RunRecord) -> JobRecord:
    """The store's record of a finished run, read from its directory (`etfarm store import`): its rows with the
    samples its samples file holds (a (device, model) it lacks is read from its ETDumps)."""
    stats = []
    for (device, model), rows in run.stats.items():
        found = run.samples(device, model)
        stats.append(found.as_stats(rows) if found is not None else ModelStats(device, model, rows))
    return job_record(run.job, run.root.resolve(), stats)


def job_record(job: Job, run_dir: Path, stats: Sequence[ModelStats]) -> JobRecord:
    """The record of a job whose statistics (and, where it has them, samples) are in memory."""
    run_dir = run_dir.resolve()
    by_pair = {(s.device, s.model): s for s in stats}
    events: list[EventRow] = []
    sample_runs: dict[tuple[str, str], tuple[str, ...]] = {}
    for device, model in job.results():
        known = by_pair.get((device.name, model.name))
        rows = {r.key: r for r in known.rows} if known is not None else {}
        samples = known.kept if known is not None else None
        if samples is not None:
            labels, model_events = tuple(str(x) for x in samples.run_labels), _from_samples(
                device.name, model.name, samples, rows)
        else:
            artifacts = job.model_artifacts(model.name)
            etrecord = Path(artifacts.etrecord) if artifacts and artifacts.etrecord else None
            pte = Path(artifacts.pte) if artifacts and artifacts.pte else None
            labels, model_events = _model_events(run_dir, device.name, model, etrecord, rows, pte)
        sample_runs[(device.name, model.name)] = labels
        events.extend(model_events)
    return JobRecord(job, run_dir, tuple(events), sample_runs)


def _model_events(run_dir: Path, device: str, model: ModelResult, etrecord: Path | None,
                  rows: RowsByKey, pte: Path | None = None) -> tuple[tuple[str, ...], list[EventRow]]:
    """A (device, model)'s events from its ETDumps on disk, or from its stats.csv rows alone."""
    dumps = [(r.label, run_dir / device / model.name / r.label / ETDUMP_NAME) for r in model.traced_runs]
    dumps = [(label, path) for label, path in dumps if path.is_file()]
    labels = tuple(label for label, _ in dumps)
    if dumps:
        try:
            linked = etrecord if etrecord and etrecord.is_file() else None
            samples = collect_samples([p for _, p in dumps], linked, run_labels=list(labels),
                                      pte=pte if linked and pte and pte.is_file() else None)
        except AnalysisError:
            samples = None
        if samples is not None:  # the samples the run kept: those of its clean executions, as the finisher chose
            samples = clean_samples(samples, model.runs)
            return labels, _from_samples(device, model.name, samples, rows)
    return (), [_from_csv_row(device, model.name, row) for row in rows.values()]


def _from_samples(device: str, model: str, samples: SampleSet, rows: RowsByKey) -> list[EventRow]:
    nruns = len(samples.run_labels)
    width = max((len(e) for e in samples.block_events), default=0) + 1
    keys = samples.block.astype(np.int64) * width + samples.event_index
    order = np.lexsort((samples.run, keys))  # by event, then run; stable, so iterations stay in order
    sorted_keys = keys[order]
    sorted_runs = samples.run[order].astype(np.int64)
    values = samples.duration_ms[order].astype(np.float64)
    starts = np.searchsorted(sorted_keys, np.unique(sorted_keys))
    ends = np.append(starts[1:], len(sorted_keys))
    by_key = {int(sorted_keys[s]): (s, e) for s, e in zip(starts, ends, strict=False)}
    events = []
    for record in summary_records(samples):
        block = samples.block_keys.index(record["event_block"])
        s, e = by_key[block * width + int(record["event_index"])]
        row = rows.get((record["event_block"], int(record["event_index"])))
        meta = {f: _text(record.get(f, getattr(row, f, None))) for f in META_FIELDS}
        meta = {f: (v if v is not None else _text(getattr(row, f, None))) for f, v in meta.items()}
        events.append(EventRow(
            device=device, model=model, event_block=record["event_block"], event_index=int(record["event_index"]),
            event_name=record["event_name"], samples=int(record["samples"]),
            stats={f: _number(record.get(f)) for f in STAT_FIELDS}, is_delegated_op=bool(record["is_delegated_op"]),
            meta=meta, samples_ms=values[s:e].copy(),
            run_counts=np.bincount(sorted_runs[s:e], minlength=nruns).astype(np.int64)))
    return events


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
