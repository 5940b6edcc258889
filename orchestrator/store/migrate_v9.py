"""Schema v9: a results row keeps the codec's JSON of its model result (`result_json`) and a process_runs row the
codec's JSON of its run (`run_json`, beside its samples), plus only the columns queries filter or sort on.

Rows of a v8 store are read the way v8 etfarm read them (typed columns, JSON of parts) and written as v9 writes them
(write.result_json, write.run_json), then the columns nothing queries any more are dropped. Run inside schema.migrate's
one transaction: a failure leaves the store at v8."""

from __future__ import annotations

import json
import sqlite3

from orchestrator.base.codec import decode
from orchestrator.base.errors import Blame
from orchestrator.results.accuracy import Accuracy
from orchestrator.results.conditions import DeviceState
from orchestrator.results.energy_figures import ModelEnergy
from orchestrator.results.footprint import ModelMemory
from orchestrator.results.model import ModelResult, ModelStatus, ProcessRun, Verification, VerificationStatus
from orchestrator.store.write import json_text, result_json, run_json

_DROPPED = {
    "process_runs": ("load_ms", "program_load_ms", "device_state_json", "artifacts_json", "runner_json"),
    "results": ("error", "blame", "verification", "verification_detail", "verification_max_abs_diff",
                "verification_runs_checked", "accuracy_json", "memory_json", "energy_json"),
}


def migrate_v9(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE results ADD COLUMN result_json TEXT")
    for rowid, label, traced, load, pload, state, arts, runner in conn.execute(
            "SELECT rowid, label, traced, load_ms, program_load_ms, device_state_json, artifacts_json, runner_json "
            "FROM process_runs WHERE run_json IS NULL").fetchall():  # stored before v3
        run = ProcessRun(label=label, traced=bool(traced), execute_ms=(), load_ms=load, program_load_ms=pload,
                         device_state=DeviceState.from_json(json.loads(state)), artifacts=tuple(json.loads(arts)),
                         runner=json.loads(runner))
        conn.execute("UPDATE process_runs SET run_json = ? WHERE rowid = ?", (json_text(run_json(run)), rowid))
    for row in conn.execute(
            "SELECT rowid, model, status, error, blame, verification, verification_detail, verification_max_abs_diff, "
            "verification_runs_checked, accuracy_json, memory_json, energy_json FROM results").fetchall():
        conn.execute("UPDATE results SET result_json = ? WHERE rowid = ?", (json_text(result_json(_v8_result(row[1:]))), row[0]))
    for table, columns in _DROPPED.items():
        for column in columns:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")


def _v8_result(row: tuple) -> ModelResult:  # type: ignore[type-arg]
    """A v8 results row as v8 etfarm read it (its process runs are rows of their own)."""
    model, status, error, blame, vstatus, vdetail, vdiff, vruns, accuracy, memory, energy = row
    return ModelResult(name=model, status=ModelStatus(status), error=error, blame=Blame(blame) if blame else None,
                       verification=(Verification(VerificationStatus(vstatus), vdetail or "", vdiff, int(vruns or 0))
                                     if vstatus is not None else None),
                       accuracy=decode(Accuracy, json.loads(accuracy)) if accuracy else None,
                       memory=decode(ModelMemory, json.loads(memory)) if memory else None,
                       energy=decode(ModelEnergy, json.loads(energy)) if energy else None)

