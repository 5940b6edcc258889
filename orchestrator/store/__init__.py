"""The results store (SQLite): every run's results model, raw samples and statistics, kept for history.

    open_store(path=None) -> Store          --store FILE, $ETFARM_STORE, $XDG_DATA_HOME/etfarm/results.db
    Store.record(run) -> run id             a results.record.RunRecord; idempotent by run id, re-recording replaces
    Store.jobs(model, device, since, limit) -> [StoredJob]           newest first
    Store.job(run_id) -> results.Job        equal to load_manifest of the run directory
    Store.run_dir(run_id) -> Path | None
    Store.history_points(model, devices, limit, before_run) -> [HistoryPoint]   newest first
    Store.event_samples(run_id, device, model) -> {(block, index): {run label: float64 ms}}
    Store.execute_samples(run_id, device, model, traced=True) -> {run label: float64 ms}
    resolve_run(ref, store=None) -> Path    a run directory, from its path or a stored run id
"""

from orchestrator.store.db import Store, StoredJob
from orchestrator.store.history import HistoryPoint
from orchestrator.store.location import open_store, resolve_run, store_path
from orchestrator.store.rows import EventRow

__all__ = ["EventRow", "HistoryPoint", "Store", "StoredJob", "open_store", "resolve_run", "store_path"]
