"""`compare --noise-floor auto` on a real SQLite store holding real recorded runs.

Two real jobs on the `local` device pinned to one core (configs/models/deep_mlp.py, and the same
file at twice the depth). The store's history is nine recordings of the real base job whose
end-to-end samples are scaled by known factors: whole jobs shifted by up to 7 %, as a loaded
host shifts them (benchmarks/README.md "Verdicts"), so the device's job-to-job noise is known.
A job shifted by less than that noise is not called a regression with `auto` (its floor, from the
nine stored runs: 22 %, is in the table and JSON); the same job without a floor is judged against the
plain 5 %; twice the depth is still `regressed`.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from orchestrator.cache import write_json_atomic
from orchestrator.run.results import load_manifest
from orchestrator.store import open_store
from orchestrator.verdicts.noise import estimate_floor
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
    real = {}
    for kind, model in mlp_variants(root).items():
        real[kind] = root / "real" / kind
        result = etfarm("run", "--config", str(inventory), "-d", "pinned", "-m", f"{model}:build", "--runs", "8",
                        "--iterations", "10", "--untraced-runs", "0", "--out", str(real[kind]), "--no-store", "-q")
        assert result.returncode == 0, result.stderr[-3000:]
    db = root / "results.db"
    with open_store(db) as store:
        for k, factor in enumerate(FACTORS):
            store.record(shifted_copy(real["base"], root / "history" / f"h{k}", f"hist-{k}",
                                      f"2026-01-{k + 1:02d}T00:00:00+0000", factor))
    within = shifted_copy(real["base"], root / "within", "within", "2026-02-01T00:00:00+0000", 1.10)
    return {"db": db, "within": within, "x2": real["x2"], "history": root / "history"}


def compare(farm: dict[str, Path], b: Path, *options: str) -> tuple[int, dict]:
    result = etfarm("compare", str(b), "--store", str(farm["db"]), "--no-ops", "--json", *options)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.mark.slow
def test_a_shift_within_the_stored_noise_is_not_a_regression_with_auto(farm: dict[str, Path]) -> None:
    code, data = compare(farm, farm["within"], "--noise-floor", "auto")
    (pair,) = data["pairs"]
    assert pair["source_a"] == "hist-8"  # last-good: the newest stored run
    assert pair["estimate"]["ratio"] == pytest.approx(1.10, rel=1e-6)  # the same runs, 10 % slower
    statistics = [factor * pair["estimate"]["median_a_ms"] for factor in FACTORS]
    expected = estimate_floor(statistics).floor
    assert pair["noise_floor"] == {"floor": pytest.approx(expected), "source": "auto", "stored_runs": len(FACTORS),
                                   "min_stored_runs": 6, "coverage": 0.95}
    assert 0.10 < expected < 0.40 and pair["threshold"] == pytest.approx(expected)
    assert code == 0 and pair["verdict"] in ("unchanged", "inconclusive")
    # without the floor the same comparison is judged against 5 %: the whole interval must beat that
    plain_code, plain = compare(farm, farm["within"])
    assert plain["pairs"][0]["threshold"] == 0.05 and plain["pairs"][0]["noise_floor"] is None
    assert plain["pairs"][0]["estimate"]["ci_low"] == pair["estimate"]["ci_low"]
    assert plain["pairs"][0]["verdict"] in ("regressed", "inconclusive")  # 1.10 cannot be inside 5 %


@pytest.mark.slow
def test_a_shift_beyond_the_stored_noise_is_a_regression_with_auto(farm: dict[str, Path]) -> None:
    # `fast`: one real job per side; with `mean` a job whose runs split between this VM's fast and
    # slow process states gives a 2x job an interval reaching down to ~1.02 (see
    # test_verdict_behaviour.py), which no floor-widened threshold can call a regression. `fast`
    # ranks the faster half of each side's runs: 8 runs make 4 against 4 (smallest p 0.029).
    code, data = compare(farm, farm["x2"], "--noise-floor", "auto", "--center", "fast")
    (pair,) = data["pairs"]
    assert pair["noise_floor"]["stored_runs"] == len(FACTORS) and pair["threshold"] > 0.10
    assert code == 1 and pair["verdict"] == "regressed", pair["estimate"]
    table = etfarm("compare", str(farm["x2"]), "--store", str(farm["db"]), "--no-ops", "--noise-floor", "auto",
                   "--center", "fast")
    assert table.returncode == 1 and "REGRESSED" in table.stdout
    assert f"% ({len(FACTORS)} runs)" in table.stdout and "noise floor per device and model" in table.stdout


@pytest.mark.slow
def test_too_short_a_history_is_no_floor_and_says_so(farm: dict[str, Path], tmp_path: Path) -> None:
    db = tmp_path / "young.db"
    with open_store(db) as store:
        for k in range(3):
            store.record(farm["history"] / f"h{k + 6}")
    result = etfarm("compare", str(farm["within"]), "--store", str(db), "--no-ops", "--json", "--noise-floor", "auto")
    pair = json.loads(result.stdout)["pairs"][0]
    assert pair["noise_floor"]["floor"] is None and pair["noise_floor"]["stored_runs"] == 3
    assert pair["threshold"] == 0.05
    assert np.isfinite(pair["estimate"]["ratio"])
