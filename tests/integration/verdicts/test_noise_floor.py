"""`compare --noise-floor auto` on a real SQLite store holding real recorded runs.

One real job on the `local` device pinned to one core (configs/models/deep_mlp.py). The store's history is
nine recordings of it whose end-to-end samples are scaled by known factors: whole jobs shifted by up to 7 %,
as a loaded host shifts them (benchmarks/README.md "Verdicts"), so the device's job-to-job noise is known and
every figure below follows from the factors, whatever the real job measured: the floor (replicate jobs of
one model content, no change point: 14.2 %, in the table and JSON), a copy 10 % slower is not regressed with
it (its interval starts at most at 1.10, under 1.142) and is never `unchanged` without it, and a copy twice as
slow is `regressed` (a copy's states are the original's, shifted: no reading of them is ambiguous; its
interval is 2.0 +- a few % of within-state spread, far above 1.142) unless the real job's own runs landed 2x
apart (the testbed's rare third state), when no separate-job compare can claim it (verdicts/device_states.py).
A store whose job of the model ran in two states 1.8x apart (the real job's fastest run, half of them 1.8x slower)
holds back a whole job 1.5x slower: `inconclusive`, the states named, exit 3.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from orchestrator.base.cache import write_json_atomic
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from orchestrator.verdicts.device_states import state_span
from orchestrator.verdicts.noise import estimate_replicate_floor
from tests.helpers.exports import export_ahead
from tests.integration.verdicts.pinned import etfarm, mlp_variants, pinned_inventory

FACTORS = [1.0, 1.06, 0.97, 1.05, 0.98, 1.07, 1.0, 1.04, 1.0]  # stored jobs, oldest first; the last is last-good


def shifted_copy(source: Path, target: Path, run_id: str, started: str, factor: float) -> Path:
    """The real run at `source` as another run: its own id and start time, every execute sample x `factor`."""
    shutil.copytree(source, target)
    job = load_manifest(target)
    devices = tuple(dataclasses.replace(d, models=tuple(dataclasses.replace(m, runs=tuple(
        dataclasses.replace(r, execute_ms=tuple(factor * v for v in r.execute_ms)) for r in m.runs)) for m in d.models))
        for d in job.devices)
    write_json_atomic(target / "manifest.json",
                      dataclasses.replace(job, run_id=run_id, started=started, devices=devices).to_dict())
    return target


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("noisefloor")
    inventory = pinned_inventory(root)
    real = root / "real" / "base"
    base = f"{mlp_variants(root)['base']}:build"
    export_ahead(base)
    result = etfarm("run", "--config", str(inventory), "-d", "pinned", "-m", base,
                    "--runs", "6", "--iterations", "10", "--untraced-runs", "0", "--out", str(real), "--no-store", "-q")
    assert result.returncode == 0, result.stderr[-3000:]
    db = root / "results.db"
    with open_store(db) as store:
        for k, factor in enumerate(FACTORS):
            store.record(RunRecord(shifted_copy(real, root / "history" / f"h{k}", f"hist-{k}",
                                      f"2026-01-{k + 1:02d}T00:00:00+0000", factor)))
    within = shifted_copy(real, root / "within", "within", "2026-02-01T00:00:00+0000", 1.10)
    twice = shifted_copy(real, root / "twice", "twice", "2026-02-01T00:00:00+0000", 2.0)
    return {"db": db, "within": within, "x2": twice, "history": root / "history", "real": real}


def compare(farm: dict[str, Path], b: Path, *options: str) -> tuple[int, dict]:
    result = etfarm("compare", str(b), "--store", str(farm["db"]), "--no-ops", "--json", *options)
    assert result.returncode in (0, 1, 3), result.stdout + result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.mark.slow
def test_a_shift_within_the_stored_noise_is_not_a_regression_with_auto(farm: dict[str, Path]) -> None:
    code, data = compare(farm, farm["within"], "--noise-floor", "auto")
    (pair,) = data["pairs"]
    assert pair["source_a"] == "hist-8"  # last-good: the newest stored run
    assert pair["estimate"]["ratio"] == pytest.approx(1.10, rel=1e-6)  # the same runs, 10 % slower
    statistics = [factor * pair["estimate"]["median_a_ms"] for factor in FACTORS]
    expected = estimate_replicate_floor(statistics, [None] * len(FACTORS)).floor
    assert pair["noise_floor"] == {"floor": pytest.approx(expected), "source": "auto", "stored_runs": len(FACTORS),
                                   "min_stored_runs": 6, "coverage": 0.95, "method": "replicates",
                                   "replicate_groups": 1}
    assert expected == pytest.approx(0.142, abs=1e-3) and pair["threshold"] == pytest.approx(expected)
    assert code == (3 if pair["verdict"] == "inconclusive" else 0) and pair["verdict"] in ("unchanged", "inconclusive")
    # without the floor the same comparison is judged against 5 %: the whole interval must beat that
    plain_code, plain = compare(farm, farm["within"])
    assert plain["pairs"][0]["threshold"] == 0.05 and plain["pairs"][0]["noise_floor"] is None
    # no floor: the interval also carries the separate jobs' shift (docs/guide/trust.md), so it is no narrower
    assert plain["pairs"][0]["estimate"]["ci_low"] <= pair["estimate"]["ci_low"]
    assert plain["pairs"][0]["verdict"] in ("regressed", "inconclusive")  # 1.10 cannot be inside 5 %


def own_span(run: Path) -> float:
    """How far apart the real job's own process runs landed in speed states (1.0: one state): its copies show the
    same, and `compare` does not claim a change such a state step could make (verdicts/device_states.py)."""
    (device,) = load_manifest(run).devices
    span = state_span([float(np.median(r.execute_ms)) for r in device.models[0].runs if r.traced])
    return span or 1.0


@pytest.mark.slow
def test_a_shift_beyond_the_stored_noise_is_a_regression_with_auto(farm: dict[str, Path]) -> None:
    code, data = compare(farm, farm["x2"], "--noise-floor", "auto")
    (pair,) = data["pairs"]
    assert pair["noise_floor"]["stored_runs"] == len(FACTORS) and pair["threshold"] > 0.10
    assert pair["estimate"]["ratio"] == pytest.approx(2.0, rel=1e-6) and pair["estimate"]["state_note"] is None
    if pair["estimate"]["ci_low"] <= own_span(farm["real"]) * (1 + pair["threshold"]):  # the real job ran 2x apart
        # (or so noisily that its interval reaches down there: then it says what it could have seen)
        reason = pair["could_not_judge"]
        assert code == 3 and pair["verdict"] == "inconclusive" and ("speed states" in reason
                                                                    or reason.startswith("too noisy")), reason
        return
    assert code == 1 and pair["verdict"] == "regressed", pair["estimate"]
    table = etfarm("compare", str(farm["x2"]), "--store", str(farm["db"]), "--no-ops", "--noise-floor", "auto")
    assert table.returncode == 1 and "REGRESSED" in table.stdout
    assert f"% ({len(FACTORS)} runs, 1 replicate groups)" in table.stdout
    assert "noise floor per device and model" in table.stdout


def states_copy(source: Path, target: Path, run_id: str, state: float) -> Path:
    """The real run made into a job of two speed states: every traced process run replaced by its fastest, and the
    second half of them `state` times slower (what a process landing in a slower state does to all its samples)."""
    shutil.copytree(source, target)
    job = load_manifest(target)
    (device,) = job.devices
    model = device.models[0]
    traced = [r for r in model.runs if r.traced]
    fastest = min(traced, key=lambda r: float(np.median(r.execute_ms))).execute_ms
    runs = tuple(dataclasses.replace(r, execute_ms=tuple(v * (state if 2 * k >= len(traced) else 1.0) for v in fastest))
                 for k, r in enumerate(traced))
    devices = (dataclasses.replace(device, models=(dataclasses.replace(model, runs=runs),)),)
    write_json_atomic(target / "manifest.json",
                      dataclasses.replace(job, run_id=run_id, started="2026-01-20T00:00:00+0000", devices=devices).to_dict())
    return target


@pytest.mark.slow
def test_a_store_that_saw_speed_states_holds_back_a_change_a_state_step_could_make(farm: dict[str, Path],
                                                                                   tmp_path: Path) -> None:
    db = tmp_path / "states.db"
    with open_store(db) as store:
        store.record(RunRecord(states_copy(farm["real"], tmp_path / "split", "split", 1.8)))
    # A: the real job with every process run its fastest (state 1.0), so a noisy hour on this host cannot make the
    # pair "too noisy" before the state rule speaks; B: the whole of A 1.5x slower.
    flat = states_copy(farm["real"], tmp_path / "flat", "flat", 1.0)
    up = shifted_copy(flat, tmp_path / "up", "up", "2026-02-01T00:00:00+0000", 1.5)
    result = etfarm("compare", str(flat), str(up), "--store", str(db), "--no-ops", "--json")
    (pair,) = json.loads(result.stdout)["pairs"]
    assert pair["estimate"]["ratio"] == pytest.approx(1.5, rel=1e-6)
    # the stored job split 3 runs fast, 3 at 1.8x; A and B are not stored: three jobs seen
    assert pair["speed_states"]["jobs_split"] >= 1 and pair["speed_states"]["jobs_seen"] == 3
    assert pair["speed_states"]["span"] >= 1.8 - 1e-9
    assert result.returncode == 3 and pair["verdict"] == "inconclusive", pair
    assert pair["could_not_judge"].startswith("regressed 1.500x, but pinned has run whole processes of this model")
    assert pair["settle"] is None  # copies of one program: nothing for `run --ab` to settle
    table = etfarm("compare", str(flat), str(up), "--store", str(db), "--no-ops")
    assert table.returncode == 3 and "speed states in" in table.stdout, table.stdout


@pytest.mark.slow
def test_too_short_a_history_is_no_floor_and_says_so(farm: dict[str, Path], tmp_path: Path) -> None:
    db = tmp_path / "young.db"
    with open_store(db) as store:
        for k in range(3):
            store.record(RunRecord(farm["history"] / f"h{k + 6}"))
    result = etfarm("compare", str(farm["within"]), "--store", str(db), "--no-ops", "--json", "--noise-floor", "auto")
    pair = json.loads(result.stdout)["pairs"][0]
    assert pair["noise_floor"]["floor"] is None and pair["noise_floor"]["stored_runs"] == 3
    assert pair["threshold"] == 0.05
    assert np.isfinite(pair["estimate"]["ratio"])
