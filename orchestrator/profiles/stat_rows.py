"""Per-event statistics as typed rows: `StatRow` is one line of `stats.csv`, with ONE writer and ONE reader.

Every producer and consumer of `stats.csv` goes through this module: the job engine (writing,
and reading back a resumed job's finished models), the results store (`store import DIR`), the
comparison report (`etfarm report DIR`) and `etfarm analyze --out` (the same columns without
`device, model`). Booleans are parsed here only. No pandas, so `etfarm report` and `etfarm analyze`
stay fast.

The columns (docs/architecture.md, "Contracts: the run directory"): `device, model`, then
analysis_core's STATS_COLUMNS, SPREAD_COLUMNS, EVENT_COLUMNS, when some row was linked to an
ETRecord LINK_COLUMNS and KERNEL_COLUMNS (an XNNPACK kernel's mapping to the user's model, read
from the .pte: `mapped` with its own module path and source line, or `unmapped` with the reason in
`kernel_note`), and when some model generated (an LLM) PHASE_COLUMNS: each event's samples of the
prefill calls and of the decode steps apart (profiles/phases.py); new columns are only ever
appended, and a reader finds them by name. Numbers are written as the shortest
text that reads back as the same double (what pandas' `to_csv` wrote before this module), a
missing value as an empty cell, lines end with `\\n`.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.base.cache import write_text_atomic
from orchestrator.base.errors import DataError
from orchestrator.profiles.analysis_core import (
    EVENT_COLUMNS,
    IDENTITY_COLUMNS,
    KERNEL_COLUMNS,
    LINK_COLUMNS,
    MAPPED,
    SPREAD_COLUMNS,
    STATS_COLUMNS,
    UNMAPPED,
    PathLike,
    SampleSet,
    collect_samples,
    summary_records,
)
from orchestrator.profiles.op_identity import OpIdentity, derived_identities, parse_handles

ID_COLUMNS = ("device", "model")
BASE_COLUMNS = (*ID_COLUMNS, *STATS_COLUMNS, *SPREAD_COLUMNS, *EVENT_COLUMNS)
COLUMNS = (*BASE_COLUMNS, *LINK_COLUMNS, *KERNEL_COLUMNS)
# An LLM's events per phase (profiles/phases.py); empty for other models and for the method-load block.
PHASE_COLUMNS = ("prefill_samples", "prefill_p50_ms", "prefill_avg_ms", "decode_samples", "decode_p50_ms", "decode_avg_ms")
# Samples of contended executions left out of the row's statistics (profiles/contended.py); empty when the
# runner measured no contention.
CLEAN_COLUMNS = ("contended_samples",)
ALL_COLUMNS = (*COLUMNS, *PHASE_COLUMNS, *IDENTITY_COLUMNS, *CLEAN_COLUMNS)
# What a file must have to be read as stats.csv (the report and the store need no more).
REQUIRED_COLUMNS = ("device", "model", "event_block", "event_index", "event_name", "p50_ms", "avg_ms")
_FLOATS = ("min_ms", "p10_ms", "p50_ms", "p90_ms", "avg_ms", "max_ms", "std_ms", "cv", "trimmed_mean_ms")
_TEXTS = ("delegate_debug_identifier", *LINK_COLUMNS, *KERNEL_COLUMNS)
_PHASE_COUNTS = ("prefill_samples", "decode_samples")
_PHASE_FLOATS = tuple(c for c in PHASE_COLUMNS if c not in _PHASE_COUNTS)


@dataclass(frozen=True)
class StatRow:
    """One event of one (device, model): its identity, Inspector's statistics (ms), what it is in the model.

    Fields are the stats.csv columns, in order. A statistic that is missing or not finite (the CV
    of an event whose mean is 0) is None. The link fields are None without an ETRecord."""

    device: str
    model: str
    event_block: str
    event_index: int
    event_name: str
    samples: int = 0
    min_ms: float | None = None
    p10_ms: float | None = None
    p50_ms: float | None = None
    p90_ms: float | None = None
    avg_ms: float | None = None
    max_ms: float | None = None
    std_ms: float | None = None
    cv: float | None = None
    trimmed_mean_ms: float | None = None
    is_delegated_op: bool | None = None
    delegate_debug_identifier: str | None = None
    op_types: str | None = None
    delegate_backend_name: str | None = None
    module_path: str | None = None
    source_line: str | None = None
    delegate_covers: str | None = None
    kernel_mapping: str | None = None  # a delegate kernel: "mapped" or "unmapped"; "" for other events
    kernel_note: str | None = None  # how a kernel maps (fused ops), or why it is not mapped
    prefill_samples: int | None = None  # PHASE_COLUMNS: None unless the model generated
    prefill_p50_ms: float | None = None
    prefill_avg_ms: float | None = None
    decode_samples: int | None = None
    decode_p50_ms: float | None = None
    decode_avg_ms: float | None = None
    op_module: str | None = None  # IDENTITY_COLUMNS: the event's OpIdentity (profiles/op_identity.py)
    op_kind: str | None = None
    op_occurrence: int | None = None
    op_basis: str | None = None
    debug_handles: str | None = None
    contended_samples: int | None = None  # CLEAN_COLUMNS: samples left out as contended; None: not measured

    @property
    def identity(self) -> OpIdentity:
        """Which op of the user's model this row is: the key every join across devices, runs and programs uses
        (read_stats_csv derives it for a file written before identities)."""
        return OpIdentity(self.op_module or "", self.op_kind or self.event_name, self.op_occurrence or 0,
                          self.op_basis or "event", parse_handles(self.debug_handles))

    @property
    def op_key(self) -> tuple[str, OpIdentity]:
        """The op within its (device, model): its block and identity (the same on every device and program)."""
        return self.event_block, self.identity

    @property
    def kernel_mapped(self) -> bool:
        """A delegate kernel named in the user's model (its module path and source line are its own)."""
        return self.kernel_mapping == MAPPED

    @property
    def kernel_unmapped(self) -> bool:
        return self.kernel_mapping == UNMAPPED

    @property
    def key(self) -> tuple[str, int]:
        """The event within its (device, model): block and Inspector's index in it."""
        return self.event_block, self.event_index

    @property
    def linked(self) -> bool:
        """The event was linked to the model's ETRecord (the link columns exist for it)."""
        return self.op_types is not None

    @property
    def phased(self) -> bool:
        """The event has samples split by phase (an LLM's forward calls)."""
        return self.prefill_samples is not None or self.decode_samples is not None

    @classmethod
    def from_record(cls, device: str, model: str, record: Mapping[str, Any]) -> StatRow:
        """A row from one of `analysis_core.summary_records`."""
        linked = "op_types" in record
        return cls(
            device=device, model=model, event_block=str(record["event_block"]), event_index=int(record["event_index"]),
            event_name=str(record["event_name"]), samples=int(record["samples"]),
            **{name: _finite(record.get(name)) for name in _FLOATS},
            is_delegated_op=bool(record["is_delegated_op"]),
            delegate_debug_identifier=_text(record.get("delegate_debug_identifier")),
            **{name: (str(record.get(name) or "") if linked else None) for name in (*LINK_COLUMNS, *KERNEL_COLUMNS)},
            op_module=str(record.get("op_module") or ""), op_kind=_text(record.get("op_kind")),
            op_occurrence=int(record.get("op_occurrence") or 0), op_basis=_text(record.get("op_basis")),
            debug_handles=str(record.get("debug_handles") or ""),
        )


assert tuple(f.name for f in fields(StatRow)) == ALL_COLUMNS, "StatRow's fields are the stats.csv columns, in order"


@dataclass(frozen=True, eq=False)
class ModelStats:
    """The statistics of one (device, model) and the samples they came from: every sample its ETDumps hold (read by
    this process, or recorded in the run's samples file; None when neither has them) and which of them were left
    out as contended (profiles/contended.py), so `kept` is what the rows were computed from."""

    device: str
    model: str
    rows: tuple[StatRow, ...]
    samples: SampleSet | None = None
    contended: np.ndarray | None = None  # bool per sample of `samples`: left out (None: none was)

    @property
    def kept(self) -> SampleSet | None:
        """The samples the rows' statistics were computed from: those of clean executions."""
        if self.samples is None or self.contended is None:
            return self.samples
        return subset(self.samples, ~self.contended)


def subset(samples: SampleSet, keep: np.ndarray) -> SampleSet:
    """`samples` with only the samples `keep` marks (what each event is, unchanged)."""
    return replace(samples, run=samples.run[keep], block=samples.block[keep], event_index=samples.event_index[keep],
                   iteration=samples.iteration[keep], duration_ms=samples.duration_ms[keep])


def rows_of(samples: SampleSet, device: str = "", model: str = "") -> tuple[StatRow, ...]:
    """The statistics of a SampleSet, one row per event with samples, in block then Inspector order."""
    return tuple(StatRow.from_record(device, model, r) for r in summary_records(samples))


def model_stats(device: str, model: str, etdumps: Sequence[PathLike], etrecord: PathLike | None,
                pte: PathLike | None = None) -> ModelStats:
    """Read a (device, model)'s ETDumps (one per process run directory, named after it) ONCE and summarise them;
    with the program's .pte, its XNNPACK kernels are named in the user's model."""
    labels = [os.path.basename(os.path.dirname(os.fspath(p))) for p in etdumps]
    samples = collect_samples(etdumps, etrecord=etrecord, run_labels=labels, pte=pte)
    return ModelStats(device, model, rows_of(samples, device, model), samples)


# ---- the one writer ----------------------------------------------------------------------------


def csv_text(rows: Iterable[StatRow], *, with_ids: bool = True, linked: bool | None = None) -> str:
    """The CSV text of `rows`: `device, model` first unless `with_ids` is False; the link columns when
    some row is linked (or when `linked` says so)."""
    rows = list(rows)
    if linked is None:
        linked = any(r.linked for r in rows)
    phased = PHASE_COLUMNS if any(r.phased for r in rows) else ()
    cleaned = CLEAN_COLUMNS if any(r.contended_samples is not None for r in rows) else ()
    columns = [c for c in (*(COLUMNS if linked else BASE_COLUMNS), *phased, *IDENTITY_COLUMNS, *cleaned)
               if with_ids or c not in ID_COLUMNS]
    return csv_line(columns) + "".join(csv_line([_cell(getattr(row, c)) for c in columns]) for row in rows)


def csv_line(values: Sequence[Any]) -> str:
    """One CSV record ending in `\\n`, every field that holds a `\\r` or `\\n` quoted (RFC 4180). Python's csv module
    with `lineterminator="\\n"` leaves a lone `\\r` unquoted, and readers then split the record there: an op or
    module name from a device must not break the file."""
    text = io.StringIO(newline="")
    csv.writer(text, lineterminator="\r\n").writerow(values)  # both characters in the terminator: both quoted
    return text.getvalue()[:-2] + "\n"


def write_stats_csv(path: str | os.PathLike[str], rows: Iterable[StatRow], *, with_ids: bool = True,
                    linked: bool | None = None) -> Path:
    """Write `rows` atomically (temp file, fsync, rename). OSError propagates: the caller knows a full disk."""
    out = Path(path)
    write_text_atomic(out, csv_text(rows, with_ids=with_ids, linked=linked))
    return out


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)  # shortest text that reads back as the same double
    return value


# ---- the one reader ----------------------------------------------------------------------------


def read_stats_csv(path: str | os.PathLike[str]) -> tuple[StatRow, ...]:
    """Every row of a stats.csv; an absent file (no device measured anything) has none. A file that is not
    one, or not a whole one, is a DataError naming it.

    Whole, as the writer makes it: every line ends with `\\n` (a file cut mid-line does not), every record has
    the header's number of fields, quotes are closed, and every value parses as its column's type."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return ()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read: {exc}") from None
    if text and not text.endswith("\n"):
        raise DataError(f"{path}: not a whole etfarm stats.csv: it ends inside a line (cut short?)")
    # the writer puts no bound on a field (one delegate call's op_types of a large model is 177 KB): no field of the
    # file can be longer than the file, which is read whole already
    csv.field_size_limit(max(csv.field_size_limit(), len(text)))
    try:
        records = csv.reader(io.StringIO(text, newline=""), strict=True)
        header = next(records, [])
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise DataError(f"{path}: not an etfarm stats.csv (missing columns {', '.join(sorted(missing))})")
        rows = tuple(_parse(_fields(header, record, records.line_num, path), records.line_num, path)
                     for record in records)
    except csv.Error as exc:
        raise DataError(f"{path}: not a whole etfarm stats.csv: {exc}") from None
    return rows if "op_kind" in header else with_derived_identities(rows)


def with_derived_identities(rows: Sequence[StatRow]) -> tuple[StatRow, ...]:
    """Rows of a stats.csv written before op identities, given one derived from their other columns (basis
    `event`): per (device, model, block), in Inspector's order."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for k, row in enumerate(rows):
        groups.setdefault((row.device, row.model, row.event_block), []).append(k)
    out = list(rows)
    for members in groups.values():
        ordered = sorted(members, key=lambda k: rows[k].event_index)
        found = derived_identities([(rows[k].event_name, bool(rows[k].is_delegated_op), rows[k].module_path or "",
                                     rows[k].op_types or "", rows[k].kernel_mapping or "") for k in ordered])
        for k, identity in zip(ordered, found, strict=True):
            out[k] = replace(rows[k], op_module=identity.module_path, op_kind=identity.op,
                             op_occurrence=identity.occurrence, op_basis=identity.basis, debug_handles="")
    return tuple(out)


def _fields(header: Sequence[str], record: Sequence[str], line: int, path: Path) -> dict[str, str]:
    if len(record) != len(header):
        raise DataError(f"{path}: not a whole etfarm stats.csv: line {line} has {len(record)} fields, the header "
                        f"{len(header)} (cut short or edited?)")
    return dict(zip(header, record, strict=True))


def group_rows(rows: Iterable[StatRow]) -> dict[tuple[str, str], tuple[StatRow, ...]]:
    """Rows by (device, model), in order of first appearance."""
    grouped: dict[tuple[str, str], list[StatRow]] = {}
    for row in rows:
        grouped.setdefault((row.device, row.model), []).append(row)
    return {key: tuple(value) for key, value in grouped.items()}


def _parse(row: Mapping[str, str], line: int, path: Path) -> StatRow:
    def value(name: str, parse: Callable[[str], Any]) -> Any:
        text = row.get(name)
        if text is None:  # a column this file does not have (an older or partial spelling)
            return None
        try:
            return parse(text)
        except ValueError:
            raise DataError(f"{path}: not a whole etfarm stats.csv: line {line}, column {name}: {text[:40]!r} does not "
                            "parse") from None

    return StatRow(
        device=row["device"], model=row["model"], event_block=row["event_block"],
        event_index=value("event_index", int), event_name=row["event_name"], samples=value("samples", _whole) or 0,
        **{name: value(name, _number) for name in _FLOATS},
        is_delegated_op=value("is_delegated_op", _boolean),
        **{name: row.get(name) for name in _TEXTS if name != "delegate_debug_identifier"},
        delegate_debug_identifier=row.get("delegate_debug_identifier") or None,
        **{name: value(name, _whole) for name in _PHASE_COUNTS},
        **{name: value(name, _number) for name in _PHASE_FLOATS},
        **_identity_fields(row, value), contended_samples=value("contended_samples", _whole),
    )


def _identity_fields(row: Mapping[str, str], value: Callable[[str, Callable[[str], Any]], Any]) -> dict[str, Any]:
    """IDENTITY_COLUMNS of a row: all None for a row written without an identity (op_kind empty)."""
    if not row.get("op_kind"):
        return dict.fromkeys(IDENTITY_COLUMNS)
    return {"op_module": row.get("op_module") or "", "op_kind": row["op_kind"],
            "op_occurrence": value("op_occurrence", _whole) or 0, "op_basis": row.get("op_basis") or None,
            "debug_handles": row.get("debug_handles") or ""}


def _boolean(text: str) -> bool | None:
    """The one place a stats.csv boolean is parsed: `True`/`False` (any case); empty is None."""
    spelled = text.strip().lower()
    if spelled not in ("true", "false", ""):
        raise ValueError(text)
    return None if not spelled else spelled == "true"


def _whole(text: str) -> int | None:
    """A count: `6` (or `6.0`, as pandas wrote some); empty is None."""
    if text == "":
        return None
    number = float(text)
    if not number.is_integer():
        raise ValueError(text)
    return int(number)


def _number(text: str) -> float | None:
    return None if text == "" else _finite(float(text))


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
