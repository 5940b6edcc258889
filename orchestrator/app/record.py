"""A finished job into the results store, from memory: the job's statistics and samples, no ETDump read again.

`etfarm store import DIR` reads the same record from a run directory (store/ingest.py `read_run`).
Recording is the job's last step and never fails it: a store that cannot be written is a warning,
and the run directory keeps everything (`etfarm store import DIR` records it later).
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.app.console import Console
from orchestrator.run.engine.job import JobResult
from orchestrator.store import open_store, store_path
from orchestrator.store.ingest import job_record


def record_job(result: JobResult, store: Path | None, console: Console, quiet: bool = False) -> None:
    """Record the job; says where on stderr (stdout stays one JSON document under --json)."""
    run_dir = result.rundir.root
    try:
        with open_store(store) as opened:
            run_id = opened.record_job(job_record(result.recorded, run_dir, result.stats))
        if not quiet:
            console.err(f"stored as {run_id} in {opened.path}")
    except Exception as exc:  # noqa: BLE001 - whatever broke, the run's results are safe in its directory
        console.err(f"warning: results not recorded in the store {store_path(store)}: {exc}; they stay in {run_dir} "
                    f"(`etfarm store import {run_dir}` records them later)")
