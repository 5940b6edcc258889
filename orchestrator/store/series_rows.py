"""What a dashboard reads of the store (`etfarm publish`): each run's stamp, and each (device, model) of a run as
one row of figures, in a handful of set-based queries per few hundred runs, so every stored run is read once and a new night
only its own runs (report/dashboard/ keeps the rows of runs it has read, by stamp).

    Store.series_rows().stamps() -> [RunStamp]        every stored run, oldest first, with when it was recorded
    Store.series_rows().points(run_ids) -> {run id: [PointRow]}   every (device, model) of the runs: latency,
                                                      load, memory, LLM, its costliest layers
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator.results.model import ModelResult, ModelStatus, ProcessRun
from orchestrator.store.llm_points import figures_of

TOP_LAYERS = 12  # a point keeps its costliest events: a series' layer trends are drawn from these
# Events that are not layers of the model: the runtime's own, and a delegate call (the sum of its kernels).
_NOT_LAYERS = ("Method::execute", "Method::init", "Program::load_method", "DELEGATE_CALL")


@dataclass(frozen=True)
class RunStamp:
    """A stored run and when it was (re)recorded: a re-recorded run is read again."""

    run_id: str
    started: str
    recorded: str
    run_dir: str | None  # where its directory was when recorded (its verdicts.json, night.json beside it)

    @property
    def token(self) -> str:
        return f"{self.run_id}@{self.recorded}"


@dataclass(frozen=True)
class PointRow:
    """One (device, model) of a stored run, as a dashboard draws it."""

    run_id: str
    started: str
    device: str
    model: str
    status: str  # the device's status, or the model's when the device was ok
    git_commit: str | None
    p50_ms: float | None  # traced runs' wall clock per execution, median over every sample
    run_medians_ms: tuple[float, ...]  # each traced process run's median: the night's spread (its interval)
    flagged: int  # traced process runs the calibration flagged interfered or throttled
    load_ms: float | None  # method load, median over the process runs
    peak_rss_kb: int | None  # highest VmHWM over the process runs
    pss_kb: int | None
    ttft_ms: float | None  # an LLM's time to first token and decode rate (llm_points.py)
    decode_tokens_per_s: float | None
    layers: tuple[tuple[str, float], ...]  # the TOP_LAYERS costliest events: (name, p50 ms), costliest first
    uj_per_inference: float | None = None  # energy per inference above idle (store v6, issue 39)
    delegate_bytes: int | None = None  # memory by owner's delegate (store v6)


class SeriesRows:
    """The store's runs as a dashboard reads them (an open connection's queries)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def stamps(self) -> list[RunStamp]:
        return [RunStamp(*row) for row in self._conn.execute(
            "SELECT run_id, started, recorded, run_dir FROM runs ORDER BY started_ts, run_id")]

    def points(self, run_ids: Sequence[str]) -> dict[str, list[PointRow]]:
        """Every device x model of each run (a device that failed before a model ran too: no figures), by run id;
        a few queries per `_CHUNK` runs, whatever their number."""
        out: dict[str, list[PointRow]] = {}
        for k in range(0, len(run_ids), _CHUNK):
            chunk = json.dumps(list(run_ids[k:k + _CHUNK]))
            runs, layers = _process_runs(self._conn, chunk), _layers(self._conn, chunk)
            rows = self._conn.execute(
                    "SELECT r.run_id, r.started, d.name, m.name, d.status, res.status, res.e2e_p50_ms, res.load_p50_ms, "
                    "m.git_commit, res.uj_per_inference, json_extract(res.result_json, '$.memory.by_owner.delegate') "
                    "FROM runs r JOIN devices d ON d.run_id = r.run_id JOIN models m ON m.run_id = r.run_id "
                    "LEFT JOIN results res ON res.run_id = r.run_id AND res.device = d.name AND res.model = m.name "
                    f"WHERE r.run_id IN {_IDS} ORDER BY r.run_id, d.ordinal, m.ordinal", (chunk,))
            for run_id, started, device, model, dstatus, mstatus, p50, load, commit, uj, delegate in rows:
                key = (run_id, device, model)
                figures = runs.get(key, _RunFigures())
                out.setdefault(run_id, []).append(PointRow(
                    run_id, started, device, model, dstatus if dstatus != "ok" or mstatus is None else mstatus, commit,
                    p50, figures.medians, figures.flagged, load, figures.peak_rss_kb, figures.extra.get("pss_kb"),
                    figures.extra.get("ttft_ms"), figures.extra.get("decode_tokens_per_s"), layers.get(key, ()), uj,
                    delegate))
        return out


_CHUNK = 500  # runs per query
_IDS = "(SELECT value FROM json_each(?))"  # a chunk's run ids, given as one JSON array
PointKey = tuple[str, str, str]  # (run id, device, model)


def _process_runs(conn: sqlite3.Connection, ids: str) -> dict[PointKey, _RunFigures]:
    """Per (run, device, model): each traced run's median, how many were flagged, the highest peak RSS, and PSS and
    an LLM's figures (llm_points.figures_of). The medians of all blobs of one length at once (numpy over a matrix),
    not a call per process run."""
    import numpy as np

    blobs: dict[int, list[tuple[PointKey, bytes]]] = {}
    flagged: dict[PointKey, int] = {}
    rss: dict[PointKey, int] = {}
    memory: dict[str, list[tuple[str, str, int, int | None, str | None]]] = {}
    for run_id, device, model, traced, blob, flag, peak, pss, llm in conn.execute(
            "SELECT run_id, device, model, traced, execute_ms, json_extract(run_json, '$.flag') IS NOT NULL, "
            "json_extract(run_json, '$.peak_rss_kb'), json_extract(run_json, '$.pss_kb'), json_extract(run_json, '$.llm') "
            f"FROM process_runs WHERE run_id IN {_IDS} ORDER BY run_id, device, model, ordinal", (ids,)):
        key = (run_id, device, model)
        memory.setdefault(run_id, []).append((device, model, traced, pss, llm))
        if peak is not None and peak >= 0:
            rss[key] = max(rss.get(key, 0), int(peak))
        if traced:
            flagged[key] = flagged.get(key, 0) + flag
            if blob:
                blobs.setdefault(len(blob), []).append((key, blob))
    medians: dict[PointKey, list[float]] = {}
    for size, found in blobs.items():
        matrix = np.frombuffer(b"".join(b for _, b in found), dtype="<f8").reshape(len(found), size // 8)
        for (key, _), value in zip(found, np.median(matrix, axis=1).tolist(), strict=True):
            medians.setdefault(key, []).append(value)
    extra = {(run_id, *pair): figures for run_id, rows in memory.items() for pair, figures in figures_of(rows).items()}
    return {k: _RunFigures(tuple(medians.get(k, ())), flagged.get(k, 0), rss.get(k), extra.get(k, {}))
            for k in set(medians) | set(flagged) | set(rss) | set(extra)}


@dataclass(frozen=True)
class _RunFigures:
    medians: tuple[float, ...] = ()
    flagged: int = 0
    peak_rss_kb: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # llm_points.figures_of: pss_kb, ttft_ms, decode_tokens_per_s


def _layers(conn: sqlite3.Connection, ids: str) -> dict[PointKey, tuple[tuple[str, float], ...]]:
    """Per (run, device, model): its TOP_LAYERS costliest events by p50, costliest first, each named by its op
    identity (profiles/op_identity.py: `fc2 linear`, the model's layer and op), never by its kernel's name: XNNPACK
    numbers its kernels (`GEMM #2`), and one new first layer renumbers every one after it. SQLite gathers a point's
    events into one JSON array, so Python handles a row per point, not per event (ranking them in SQL with window
    functions took 6x longer)."""
    found = {}
    for run_id, device, model, events in conn.execute(
            "SELECT run_id, device, model, json_group_array(json_array(event_block, event_name, is_delegated_op, "
            "module_path, op_types, kernel_mapping, p50_ms)) FROM events "
            f"WHERE run_id IN {_IDS} AND p50_ms IS NOT NULL AND event_name NOT IN ({', '.join('?' * len(_NOT_LAYERS))}) "
            "GROUP BY run_id, device, model", (ids, *_NOT_LAYERS)):
        found[(run_id, device, model)] = tuple(sorted(_named(json.loads(events)), key=lambda c: -c[1])[:TOP_LAYERS])
    return found


def _named(events: Sequence[Sequence[Any]]) -> list[tuple[str, float]]:
    """Each event (in the program's order, rowid) as (its identity's label, p50 ms); a second block's labels say it."""
    # the op identity's module brings numpy (the kernel map): `history` and every store command must not
    from orchestrator.profiles.op_identity import derived_identities

    blocks: dict[str, list[Sequence[Any]]] = {}
    for event in events:
        blocks.setdefault(str(event[0]), []).append(event)
    named = []
    for k, (block, rows) in enumerate(blocks.items()):
        identities = derived_identities([(str(name), bool(delegated), module or "", op_types or "", mapping or "")
                                         for _, name, delegated, module, op_types, mapping, _ in rows])
        prefix = f"{block}: " if k else ""
        named += [(prefix + identity.label, float(row[-1])) for identity, row in zip(identities, rows, strict=True)
                  if identity.is_op]
    return named


def llm_results(conn: sqlite3.Connection, device_run: str, device: str) -> tuple[ModelResult, ...]:
    """A device's results in a run, only the models whose traced process runs generated (an LLM's), each with those
    runs but no samples: what likeness.SeriesKey reads of results (llm_figures.generation_key), at a query a device."""
    runs: dict[str, tuple[str, list[ProcessRun]]] = {}
    for model, status, whole in conn.execute(
            "SELECT pr.model, res.status, pr.run_json FROM process_runs pr JOIN results res ON res.run_id = pr.run_id "
            "AND res.device = pr.device AND res.model = pr.model WHERE pr.run_id = ? AND pr.device = ? AND pr.traced = 1 "
            "AND json_extract(pr.run_json, '$.llm') IS NOT NULL ORDER BY res.ordinal, pr.ordinal", (device_run, device)):
        runs.setdefault(model, (status, []))[1].append(ProcessRun.from_dict({**json.loads(whole), "execute_ms": []}))
    return tuple(ModelResult(model, ModelStatus(status), tuple(found)) for model, (status, found) in runs.items())
