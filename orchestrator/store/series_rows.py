"""What a dashboard reads of the store (`etfarm publish`): each run's stamp, and each (device, model) of a run as
one row of figures, in a handful of set-based queries per run, so every stored run is read once and a new night
only its own runs (report/dashboard/ keeps the rows of runs it has read, by stamp).

    Store.series_rows().stamps() -> [RunStamp]        every stored run, oldest first, with when it was recorded
    Store.series_rows().points(run_id) -> [PointRow]  every (device, model) of the run: latency, load, memory, LLM,
                                                      its costliest layers
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from orchestrator.store.llm_points import memory_and_llm

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


class SeriesRows:
    """The store's runs as a dashboard reads them (an open connection's queries)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def stamps(self) -> list[RunStamp]:
        return [RunStamp(*row) for row in self._conn.execute(
            "SELECT run_id, started, recorded, run_dir FROM runs ORDER BY started_ts, run_id")]

    def points(self, run_id: str) -> list[PointRow]:
        return point_rows(self._conn, run_id)


def point_rows(conn: sqlite3.Connection, run_id: str) -> list[PointRow]:
    """Every device x model of the run (a device that failed before a model ran too: no figures)."""
    runs = _process_runs(conn, run_id)
    layers = _layers(conn, run_id)
    extra = memory_and_llm(conn, run_id)
    out = []
    for started, device, model, dstatus, mstatus, p50, load, commit in conn.execute(
            "SELECT r.started, d.name, m.name, d.status, res.status, res.e2e_p50_ms, res.load_p50_ms, m.git_commit "
            "FROM runs r JOIN devices d ON d.run_id = r.run_id JOIN models m ON m.run_id = r.run_id "
            "LEFT JOIN results res ON res.run_id = r.run_id AND res.device = d.name AND res.model = m.name "
            "WHERE r.run_id = ? ORDER BY d.ordinal, m.ordinal", (run_id,)):
        medians, flagged, rss = runs.get((device, model), ((), 0, None))
        figures = extra.get((device, model), {})
        out.append(PointRow(run_id, started, device, model, dstatus if dstatus != "ok" or mstatus is None else mstatus,
                            commit, p50, medians, flagged, load, rss, figures.get("pss_kb"), figures.get("ttft_ms"),
                            figures.get("decode_tokens_per_s"), layers.get((device, model), ())))
    return out


def _process_runs(conn: sqlite3.Connection, run_id: str) -> dict[tuple[str, str], tuple[tuple[float, ...], int, int | None]]:
    """Per (device, model): each traced run's median, how many were flagged, the highest peak RSS."""
    import numpy as np

    medians: dict[tuple[str, str], list[float]] = {}
    flagged: dict[tuple[str, str], int] = {}
    rss: dict[tuple[str, str], int] = {}
    for device, model, traced, blob, flag, peak in conn.execute(
            "SELECT device, model, traced, execute_ms, json_extract(run_json, '$.flag') IS NOT NULL, "
            "json_extract(run_json, '$.peak_rss_kb') FROM process_runs WHERE run_id = ? ORDER BY ordinal", (run_id,)):
        key = (device, model)
        if peak is not None and peak >= 0:
            rss[key] = max(rss.get(key, 0), int(peak))
        if not traced:
            continue
        samples = np.frombuffer(blob, dtype="<f8")
        if samples.size:
            medians.setdefault(key, []).append(float(np.median(samples)))
        flagged[key] = flagged.get(key, 0) + int(bool(flag))
    keys = set(medians) | set(flagged) | set(rss)
    return {k: (tuple(medians.get(k, ())), flagged.get(k, 0), rss.get(k)) for k in keys}


def _layers(conn: sqlite3.Connection, run_id: str) -> dict[tuple[str, str], tuple[tuple[str, float], ...]]:
    """Per (device, model): its TOP_LAYERS costliest events by p50, named `name` (`name#k` for the k-th of a name)."""
    found: dict[tuple[str, str], list[tuple[str, float]]] = {}
    seen: dict[tuple[str, str, str], int] = {}
    for device, model, name, p50 in conn.execute(
            f"SELECT device, model, event_name, p50_ms FROM events WHERE run_id = ? AND p50_ms IS NOT NULL "
            f"AND event_name NOT IN ({', '.join('?' * len(_NOT_LAYERS))}) ORDER BY rowid", (run_id, *_NOT_LAYERS)):
        k = seen.get((device, model, name), 0)
        seen[(device, model, name)] = k + 1
        found.setdefault((device, model), []).append((name if k == 0 else f"{name}#{k + 1}", float(p50)))
    return {key: tuple(sorted(rows, key=lambda r: -r[1])[:TOP_LAYERS]) for key, rows in found.items()}

