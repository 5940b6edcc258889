"""History points for a report: the same models on the same devices in earlier runs, from the store.

The results store (`orchestrator.store`) is built on another branch; until it offers
`open_store(path).history_points(models=..., devices=...)`, a report has no history and says so.
A store that cannot be opened never stops a report: the history section just stays empty.
"""

from __future__ import annotations

import logging
from pathlib import Path

from orchestrator.run.results import Job
from orchestrator.store.history import HistoryPoint

log = logging.getLogger(__name__)


def history_points(job: Job, store: Path | None) -> tuple[HistoryPoint, ...]:
    import orchestrator.store as store_api

    open_store = getattr(store_api, "open_store", None)
    if open_store is None:
        return ()
    models = tuple(dict.fromkeys(m.name for _, m in job.results()))
    devices = tuple(d.name for d in job.devices)
    try:
        with open_store(store) as db:
            return tuple(db.history_points(models=models, devices=devices))
    except Exception as exc:  # noqa: BLE001 - history is optional in a report
        log.warning("no history from the store: %s", exc)
        return ()
