"""Per-op statistics from ETDumps as pandas frames: samples, per event, per run, per method.

Statistics follow Inspector's definitions (numpy's linear percentiles, mean, min, max;
ns -> ms by dividing by 1e6) over ALL samples of an event across all files given, plus
std (ddof=1), cv = std/mean and a 10-90 % trimmed mean. Keys: `event_block` (block name,
`name#2`... for further distinct signatures of one name) and `event_index` (the event's
position in the block as Inspector lists it), so rows line up with
`Inspector.to_dataframe()`. The numpy-only machinery lives in `analysis_core`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from orchestrator.profiles.analysis_core import (
    EVENT_COLUMNS,
    KERNEL_COLUMNS,
    LINK_COLUMNS,
    SPREAD_COLUMNS,
    STATS_COLUMNS,
    PathLike,
    SampleSet,
    collect_samples,
    group_stats,
    record_columns,
    summary_records,
)
from orchestrator.profiles.op_identity import FRAMEWORK_EVENTS
from orchestrator.profiles.source import OP_TYPES_SEPARATOR, module_path, source_line

__all__ = [
    "STATS_COLUMNS",
    "SPREAD_COLUMNS",
    "analyze_files",
    "load_events",
    "load_samples",
    "method_summary",
    "per_run",
    "samples_frame",
    "summarize",
]
KEY_COLUMNS = ["event_block", "event_index"]
_META_COLUMNS = [*EVENT_COLUMNS, *LINK_COLUMNS, *KERNEL_COLUMNS]


def load_samples(
    etdump_paths: Sequence[PathLike], etrecord: PathLike | None = None, run_labels: Sequence[str] | None = None
) -> pd.DataFrame:
    """One row per sample: run, event_block, event_index, event_name, iteration, duration_ms,
    is_delegated_op, delegate_debug_identifier (+ op_types, delegate_backend_name, module_path,
    source_line, delegate_covers with an ETRecord). `run` is the file's label, or its index in `etdump_paths`; `iteration`
    is the instance of the block within its file."""
    return samples_frame(collect_samples(etdump_paths, etrecord, run_labels))


def samples_frame(samples: SampleSet) -> pd.DataFrame:
    """A SampleSet as a DataFrame (repeated strings as categoricals: cheap for 100k+ rows)."""
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in samples.block_events])]).astype(np.int64)
    flat = offsets[samples.block.astype(np.int64)] + samples.event_index  # sample -> event row
    rows = [samples.event_row(b, i) for b, events in enumerate(samples.block_events) for i in range(len(events))]

    def per_event(column: str) -> pd.Categorical:
        codes, uniques = pd.factorize(pd.Series([r[column] for r in rows], dtype="object"), use_na_sentinel=True)
        return pd.Categorical.from_codes(codes[flat] if len(codes) else flat, categories=pd.Index(uniques, dtype="object"))

    if all(isinstance(label, (int, np.integer)) for label in samples.run_labels):
        run: Any = (
            np.asarray(samples.run_labels, dtype=np.int64)[samples.run] if samples.run.size else samples.run.astype(np.int64)
        )
    else:
        categories = list(dict.fromkeys(samples.run_labels))  # repeated labels merge into one run
        file_codes = np.array([categories.index(label) for label in samples.run_labels], dtype=np.int64)
        run = pd.Categorical.from_codes(file_codes[samples.run], categories=categories)
    frame = pd.DataFrame(
        {
            "run": run,
            "event_block": pd.Categorical.from_codes(samples.block, categories=list(samples.block_keys)),
            "event_index": samples.event_index.astype(np.int64),
            "event_name": per_event("event_name"),
            "iteration": samples.iteration.astype(np.int64),
            "duration_ms": samples.duration_ms,
            "is_delegated_op": np.array([r["is_delegated_op"] for r in rows], dtype=bool)[flat],
        }
    )
    linked = [*LINK_COLUMNS, *KERNEL_COLUMNS] if samples.block_links is not None else []
    for column in ["delegate_debug_identifier", *linked]:
        frame[column] = per_event(column)
    return frame


def summarize(samples: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per (*by, event_block, event_index), in order of first appearance.

    Columns: *by, STATS_COLUMNS, cv, trimmed_mean_ms, then the event metadata columns
    present in `samples` (is_delegated_op, delegate_debug_identifier, op_types,
    delegate_backend_name, module_path, source_line, delegate_covers).
    """
    meta = [c for c in _META_COLUMNS if c in samples]
    if samples.empty:
        return pd.DataFrame(columns=[*by, *STATS_COLUMNS, *SPREAD_COLUMNS, *meta])
    gid = samples.groupby([*by, *KEY_COLUMNS], sort=False, observed=True).ngroup().to_numpy()
    ngroups = int(gid.max()) + 1
    first = np.full(ngroups, len(gid), dtype=np.int64)
    np.minimum.at(first, gid, np.arange(len(gid)))
    stats = group_stats(samples["duration_ms"].to_numpy(dtype=np.float64), gid, ngroups)
    out: dict[str, Any] = {c: _first_values(samples[c], first) for c in [*by, *KEY_COLUMNS, "event_name"]}
    out.update(stats)
    out.update({c: _first_values(samples[c], first) for c in meta})
    return pd.DataFrame(out)


def _first_values(column: pd.Series, rows: np.ndarray) -> np.ndarray:
    picked = column.iloc[rows]
    if isinstance(picked.dtype, pd.CategoricalDtype):  # plain objects, None for missing
        return np.array([None if v is None or v != v else v for v in picked.astype(object)], dtype=object)
    return picked.to_numpy()


def per_run(samples: pd.DataFrame) -> pd.DataFrame:
    """Per event per run statistics: summarize(samples, by=["run"])."""
    return summarize(samples, by=["run"])


def method_summary(samples: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """End to end (Method::execute) and load time (Method::init, Program::load_method).

    `measure` is execute / init / load_method. ETDump blocks carry no method name; with one
    method per program (the runner's case) the rows are that method's.
    """
    framework = samples[samples["event_name"].isin(list(FRAMEWORK_EVENTS))]
    summary = summarize(framework, by=by)
    summary.insert(len(by), "measure", summary["event_name"].map(FRAMEWORK_EVENTS))
    return summary[[*by, "measure", *STATS_COLUMNS, *SPREAD_COLUMNS]].reset_index(drop=True)


def analyze_files(
    paths: Sequence[PathLike], etrecord: PathLike | None = None, run_labels: Sequence[str] | None = None
) -> pd.DataFrame:
    """summarize(load_samples(paths, etrecord)), without building the samples frame."""
    samples = collect_samples(paths, etrecord, run_labels)
    return pd.DataFrame(summary_records(samples), columns=record_columns(samples))


def load_events(etdump_paths: Sequence[PathLike], etrecord: PathLike | None = None) -> pd.DataFrame:
    """One row per event of every block (also events without timing), with Inspector's
    ETRecord fields as Python objects: op_types (list), debug_handles, stack_traces,
    module_hierarchy (dicts keyed by node name), delegate_backend_name."""
    samples = collect_samples(etdump_paths, etrecord)
    rows = []
    for block, events in enumerate(samples.block_events):
        for info in events:
            row: dict[str, Any] = {
                "event_block": samples.block_keys[block],
                "event_index": info.index,
                "event_name": info.name,
                "instruction_id": info.instruction_id,
                "delegate_debug_identifier": info.delegate_debug_identifier,
                "is_delegated_op": info.is_delegated_op,
                "has_perf": info.has_perf,
            }
            if samples.block_links is not None:
                link = samples.block_links[block][info.index]
                row.update(
                    op_types=list(link.op_types),
                    debug_handles=link.debug_handles,
                    stack_traces=link.stack_traces,
                    module_hierarchy=link.module_hierarchy,
                    delegate_backend_name=link.delegate_backend_name,
                    module_path=module_path(link.module_hierarchy),
                    source_line=source_line(link.stack_traces),
                    delegate_covers=list(link.delegate_covers),
                )
            rows.append(row)
    frame = pd.DataFrame(rows)
    for column in ("delegate_debug_identifier", "delegate_backend_name"):  # None stays None, as in Inspector
        if column in frame:
            frame[column] = pd.Series([r[column] for r in rows], dtype=object)
    return frame


def split_op_types(value: str | None) -> list[str]:
    """The op_types column back to Inspector's list form."""
    return value.split(OP_TYPES_SEPARATOR) if value else []
