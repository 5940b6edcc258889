"""The results store on a testbed run: two SSH devices (each its own sshd) and `local`, a real SQLite file.

One `etfarm run --store DB` over the fleet, then: the stored job equals the manifest, raw event
samples equal the ETDumps', `store import` is idempotent, two processes recording at once leave
a sound database, a store written at schema version 1 is migrated, and a store that cannot be
written is a warning that keeps the run's results and exit code.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from device_agents import DeviceSpec
from orchestrator.base.cache import write_json_atomic
from orchestrator.emulate.sshd import start_sshd
from orchestrator.profiles.analysis_core import collect_samples
from orchestrator.results.model import ProcessRun, load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from orchestrator.store.schema import MIGRATIONS, SCHEMA_VERSION, migrate, user_version
from tests.helpers.inspector_stats import clean_executions
from tests.helpers.inventory import write_inventory

REPO = Path(__file__).resolve().parents[2]
TINY = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"
DEVICES = ("ssh1", "ssh2", "local")
TABLES = ("runs", "models", "devices", "results", "process_runs", "events")


def etfarm(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], check=False, capture_output=True,
                          text=True, timeout=timeout)


@dataclass(frozen=True)
class FleetRun:
    run_dir: Path
    store: Path
    config: Path
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetRun]:
    root = tmp_path_factory.mktemp("store-fleet")
    hosts = [start_sshd(tmp_path_factory.mktemp("sshd")) for _ in range(2)]
    try:
        specs = [host.spec(name, root / f"{name}-workdir") for host, name in zip(hosts, DEVICES[:2], strict=False)]
        specs.append(DeviceSpec("local", "host", str(root / "local-workdir")))
        config = write_inventory(root / "devices.yaml", specs)
        store = root / "results.db"
        result = etfarm("run", "--config", str(config), "--devices", ",".join(DEVICES), "--model", TINY,
                        "--runs", "2", "--iterations", "3", "--warmup", "1", "--out", str(root / "run"),
                        "--store", str(store))
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        yield FleetRun(root / "run", store, config, result.stdout, result.stderr)
    finally:
        for host in hosts:
            host.stop()


def _counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


@pytest.mark.slow
def test_run_records_itself_and_round_trips(fleet: FleetRun) -> None:
    manifest = load_manifest(fleet.run_dir)
    assert f"stored as {manifest.run_id} in {fleet.store}" in fleet.stderr
    with open_store(fleet.store) as store:
        assert store.job(manifest.run_id).to_dict() == manifest.to_dict()
        assert store.run_dir(manifest.run_id) == fleet.run_dir.resolve()
        (stored,) = store.jobs()
        assert stored.status == "ok" and set(stored.devices) == set(DEVICES)
        points = store.history_points("tiny_cnn")
        assert {p.device for p in points} == set(DEVICES) and all(p.status == "ok" for p in points)
        for device in DEVICES:
            model = manifest.device(device).model("tiny_cnn")
            assert model.verification is not None and model.verification.status == "pass"
            assert manifest.device(device).runner_key  # the runner build each device ran
            point = next(p for p in points if p.device == device)
            assert point.e2e_p50_ms == pytest.approx(float(np.median(model.reported_execute_ms)))  # clean executions
            execute = store.execute_samples(manifest.run_id, device, "tiny_cnn")
            assert {k: tuple(v) for k, v in execute.items()} == {r.label: r.execute_ms for r in model.traced_runs}
            untraced = store.execute_samples(manifest.run_id, device, "tiny_cnn", traced=False)
            assert {k: tuple(v) for k, v in untraced.items()} == {r.label: r.execute_ms for r in model.untraced_runs}
            _assert_event_samples_equal_etdumps(store.event_samples(manifest.run_id, device, "tiny_cnn"),
                                                fleet.run_dir / device / "tiny_cnn")
        # statistics are stats.csv's, event by event
        import pandas as pd

        csv = pd.read_csv(fleet.run_dir / "stats.csv")
        for device in DEVICES:
            events = store.events(manifest.run_id, device, "tiny_cnn")
            own = csv[csv["device"] == device]
            assert len(events) == len(own)
            for event, (_, row) in zip(events, own.iterrows(), strict=False):
                assert (event.event_block, event.event_index, event.event_name) == (row.event_block, row.event_index,
                                                                                    row.event_name)
                assert event.samples == row.samples
                assert event.stats["p50_ms"] == pytest.approx(row.p50_ms, rel=1e-12)
                assert event.meta["op_types"] == (row.op_types if isinstance(row.op_types, str) else None)
    # the model's provenance: this checkout is a git repository
    artifacts = manifest.model_artifacts("tiny_cnn")
    assert artifacts is not None and artifacts.content_hash and artifacts.git_commit


def _assert_event_samples_equal_etdumps(stored: dict, model_dir: Path) -> None:  # type: ignore[type-arg]
    dumps = sorted(model_dir.glob("run-*/etdump.etdp"))
    assert len(dumps) == 2
    assert stored
    for dump in dumps:
        samples = collect_samples([dump])
        for (block, index), per_run in stored.items():
            mask = (samples.block == samples.block_keys.index(block)) & (samples.event_index == index)
            values, clean = samples.duration_ms[mask], clean_executions(dump)
            if clean is not None and len(values) == len(clean):  # an op of every execution: the contended ones left out
                values = values[np.array(clean, dtype=bool)]
            np.testing.assert_array_equal(per_run[dump.parent.name], values)


@pytest.mark.slow
def test_import_is_idempotent(fleet: FleetRun, tmp_path: Path) -> None:
    db = tmp_path / "imported.db"
    first = etfarm("store", "import", str(fleet.run_dir), "--store", str(db))
    assert first.returncode == 0, first.stderr
    counts = _counts(db)
    assert counts["runs"] == 1 and counts["events"] > 0
    again = etfarm("store", "import", str(fleet.run_dir), str(fleet.run_dir), "--store", str(db))
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("re-recorded") == 2
    assert _counts(db) == counts
    assert _counts(db) == _counts(fleet.store)  # the same rows as `etfarm run` recorded itself
    history = etfarm("history", "--store", str(db))
    assert history.returncode == 0
    assert all(f"{d} p50 ms" in history.stdout for d in DEVICES)


_WRITER = """
import os, sys, time
from pathlib import Path
from orchestrator.store import open_store
from orchestrator.results.record import RunRecord
from orchestrator.store.ingest import read_run  # imported before the start line, like the other writer
db, gate, dirs = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
(gate / str(os.getpid())).touch()
while len(list(gate.iterdir())) < 2:  # both writers ready: go together
    time.sleep(0.001)
with open_store(db) as store:
    first = time.time()
    for d in dirs:
        store.record(RunRecord(d))
    print(first, time.time())
"""


@pytest.mark.slow
def test_two_processes_recording_at_once(fleet: FleetRun, tmp_path: Path) -> None:
    """Each writer records 8 copies of the run (own run ids) and the same shared run, at the same time."""
    manifest = load_manifest(fleet.run_dir)
    copies: dict[str, list[str]] = {"a": [], "b": []}
    for writer, dirs in copies.items():
        for k in range(8):
            run_id = f"{manifest.run_id}-{writer}{k}"
            target = tmp_path / "runs" / run_id
            shutil.copytree(fleet.run_dir, target)
            write_json_atomic(target / "manifest.json", replace(manifest, run_id=run_id).to_dict())
            dirs.append(str(target))
        dirs.append(str(fleet.run_dir))  # both re-record the same run too
    db = tmp_path / "concurrent.db"
    gate = tmp_path / "gate"
    gate.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(db), str(gate), *dirs], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for dirs in copies.values()]
    spans = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        spans.append(tuple(float(x) for x in out.split()))
    (a0, a1), (b0, b1) = spans
    assert a0 < b1 and b0 < a1, f"the writers did not overlap: {spans}"  # they really competed for the lock

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    with open_store(db) as store:
        stored = {r.run_id for r in store.jobs()}
        assert stored == {manifest.run_id} | {Path(d).name for dirs in copies.values() for d in dirs[:-1]}
        for run_id in stored:
            assert store.job(run_id).to_dict() == replace(manifest, run_id=run_id).to_dict()
    per_run = _counts(fleet.store)
    assert _counts(db) == {t: n * 17 for t, n in per_run.items()}


# v1 columns a v9 store keeps only in the codec's JSON of a model result (results) or of a process run (process_runs)
_V1_FROM_JSON = {("results", column): f"json_extract(result_json, '$.{path}')" for column, path in (
    ("error", "error"), ("blame", "blame"), ("verification", "verification.status"),
    ("verification_detail", "verification.detail"), ("verification_max_abs_diff", "verification.max_abs_diff"),
    ("verification_runs_checked", "verification.runs_checked"))} | {
    ("process_runs", column): f"json_extract(run_json, '$.{path}')" for column, path in (
    ("load_ms", "load_ms"), ("program_load_ms", "program_load_ms"), ("device_state_json", "device_state"),
    ("artifacts_json", "artifacts"), ("runner_json", "runner"))}


@pytest.mark.slow
def test_store_at_schema_v1_is_migrated(fleet: FleetRun, tmp_path: Path) -> None:
    """A store etfarm wrote at version 1 (the fixture schema), holding this run, opened by this etfarm."""
    old = tmp_path / "v1.db"
    conn = sqlite3.connect(old, isolation_level=None)
    conn.executescript((Path(__file__).parent / "fixtures" / "store_v1.sql").read_text())
    assert user_version(conn) == 1
    conn.execute("ATTACH DATABASE ? AS new", (str(fleet.store),))
    for table in TABLES:  # the run's rows, in the columns version 1 had (since v9 some are in the rows' JSON)
        columns = [row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")]
        values = [_V1_FROM_JSON.get((table, c), c) for c in columns]
        conn.execute(f"INSERT INTO main.{table} ({', '.join(columns)}) SELECT {', '.join(values)} FROM new.{table}")
    conn.execute("DETACH DATABASE new")
    conn.close()

    manifest = load_manifest(fleet.run_dir)
    # What version 1 had no column for comes back empty; everything else is as recorded.
    def v1_run(r: ProcessRun) -> ProcessRun:
        return ProcessRun(r.label, r.traced, r.execute_ms, r.load_ms, r.program_load_ms, r.device_state, r.artifacts, r.runner)

    v1_view = replace(
        manifest, models=tuple(replace(m, numerics_reference=None) for m in manifest.models),
        devices=tuple(replace(d, controls={}, models=tuple(replace(m, runs=tuple(map(v1_run, m.runs)), memory=None, energy=None)
                                                        for m in d.models))
                      for d in manifest.devices))
    with open_store(old) as store:
        assert store.job(manifest.run_id).to_dict() == v1_view.to_dict()
        assert [p.device for p in store.history_points("tiny_cnn")] == [d.name for d in manifest.devices]
        store.record(RunRecord(fleet.run_dir))  # and records into the migrated schema
    conn = sqlite3.connect(old)
    assert user_version(conn) == SCHEMA_VERSION
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # the fixture is what migration 1 creates: migrations are never edited once released
    fresh = sqlite3.connect(":memory:", isolation_level=None)
    migrate(fresh, MIGRATIONS[:1])
    schema = "SELECT name, sql FROM sqlite_master ORDER BY name"
    v1 = sqlite3.connect(":memory:", isolation_level=None)
    v1.executescript((Path(__file__).parent / "fixtures" / "store_v1.sql").read_text())
    assert fresh.execute(schema).fetchall() == v1.execute(schema).fetchall()


@pytest.mark.slow
def test_unusable_store_is_a_warning_and_results_stay(tmp_path: Path) -> None:
    # A store path under a regular file is refused before any work (test_environment_errors.py); a store
    # file that turns out to be no SQLite database is found only when the job records itself.
    garbage = tmp_path / "results.db"
    garbage.write_bytes(bytes(range(256)) * 16)
    out = tmp_path / "run"
    result = etfarm("run", "--model", TINY, "--runs", "1", "--iterations", "2", "--out", str(out), "--quiet",
                    "--store", str(garbage))
    assert result.returncode == 0, result.stderr[-3000:]
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: results not recorded")]
    assert len(warnings) == 1 and f"etfarm store import {out}" in warnings[0]
    assert "Traceback" not in result.stderr
    assert load_manifest(out).status == "ok" and (out / "stats.csv").is_file()
    skipped = etfarm("run", "--model", TINY, "--runs", "1", "--iterations", "2", "--out", str(tmp_path / "run2"),
                     "--quiet", "--no-store", "--store", str(tmp_path / "never.db"))
    assert skipped.returncode == 0 and not (tmp_path / "never.db").exists() and "stored as" not in skipped.stdout + skipped.stderr
