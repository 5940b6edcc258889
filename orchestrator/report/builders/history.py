"""History points for a report: the same models on the same devices in the store's last runs.

Reads `orchestrator.store` (`Store.history_points`). Reading never creates a store: with no
database file there is simply no history. A store that cannot be read never stops a report
either: the history section says "no history" and a warning goes to the log.
"""

from __future__ import annotations

import logging
from pathlib import Path

from orchestrator.results.model import Job
from orchestrator.store import open_store, store_path
from orchestrator.store.history import HistoryPoint

log = logging.getLogger(__name__)
HISTORY_RUNS = 10  # the last N runs of each model


def history_points(job: Job, store: Path | None, runs: int = HISTORY_RUNS) -> tuple[HistoryPoint, ...]:
    """Every stored point of this job's models on its devices, in each model's last `runs` runs."""
    location = store_path(store)
    if not location.is_file():
        return ()
    devices = [d.name for d in job.devices]
    models = list(dict.fromkeys([*(m.name for m in job.models), *(m.name for _, m in job.results())]))
    try:
        with open_store(location) as opened:
            return tuple(p for model in models for p in opened.history_points(model, devices, limit=runs))
    except Exception as exc:  # noqa: BLE001 - history is optional in a report
        log.warning("no history from the store %s: %s", location, exc)
        return ()
