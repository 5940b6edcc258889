"""A night against its last good run on a device whose stored jobs have shown speed states (trust.state_step): a
change a whole job in another state could make is not judged from the two separate jobs but sent to the
interleaved confirmation; a change beyond the span stands. Real SQLite store, synthetic run directories
(deterministic samples), the nightly's own comparison step (app/nightly.py `_compare`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from orchestrator.app.nightly import _compare, _Histories
from orchestrator.app.nightly_plan import NightlyPlan
from orchestrator.base.cache import write_json_atomic
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from orchestrator.verdicts.compare import PairVerdict
from orchestrator.verdicts.confirmation import suspected
from orchestrator.verdicts.statistics import Verdict
from tests.unit.store.rundirs import make_run_dir


def job(tmp_path: Path, run_id: str, day: int, factors: tuple[float, ...], iterations: int = 10) -> Path:
    """A stored-shaped run of mlp on `local` whose k-th process run is scaled by factors[k] (a speed state each)."""
    run_dir = make_run_dir(tmp_path / "runs", run_id, f"2026-01-{day:02d}T00:00:00+0000", devices=("local",),
                           runs=len(factors), iterations=iterations)
    manifest = load_manifest(run_dir)
    devices = tuple(dataclasses.replace(d, models=tuple(dataclasses.replace(m, runs=tuple(
        dataclasses.replace(r, execute_ms=tuple(f * v for v in r.execute_ms)) for r, f in zip(
            m.runs, [*factors, 1.0], strict=True))) for m in d.models)) for d in manifest.devices)
    write_json_atomic(run_dir / "manifest.json", dataclasses.replace(manifest, devices=devices).to_dict())
    return run_dir


def night_pair(tmp_path: Path, split: bool, last_good: float, tonight: float, nights: int = 1) -> PairVerdict:
    """Tonight's job (every run at `tonight`) against its last good (every run at `last_good`, `nights` such jobs),
    after a stored job whose runs split 1.5x apart (`split`) or did not. With `nights` > 1 that job ran with other
    settings: it shows the device's states (which do not depend on them) but stays out of the series."""
    with open_store(tmp_path / "results.db") as store:
        states = (1.0, 1.0, 1.0, 1.5, 1.5, 1.5) if split else (1.0,) * 6
        store.record(RunRecord(job(tmp_path, "run-0", 1, states, iterations=10 if nights == 1 else 12)))
        for k in range(1, nights + 1):
            store.record(RunRecord(job(tmp_path, f"run-{k}", k + 1, (last_good,) * 6)))
        night = job(tmp_path, "run-b", 20, (tonight,) * 6)
        store.record(RunRecord(night))
        plan = NightlyPlan(path=tmp_path / "plan.yaml", devices=("local",), models=(), report=tmp_path, out=tmp_path)
        result = SimpleNamespace(rundir=SimpleNamespace(root=night), job=load_manifest(night))
        (pair,) = _compare(plan, store, result, _Histories(store, result.job)).pairs  # type: ignore[arg-type]
    return pair


@pytest.mark.parametrize(("last_good", "tonight"), [(1.4, 1.0), (1.0, 1.4)])
def test_a_step_within_the_devices_states_is_confirmed_not_judged(tmp_path: Path, last_good: float,
                                                                  tonight: float) -> None:
    """Live on the speed-state VM, a night of an unchanged model read `improved 0.703x` against a last good run that
    had landed one state up; an improvement is never confirmed, so the night claimed it."""
    pair = night_pair(tmp_path, True, last_good, tonight)
    assert pair.verdict is Verdict.INCONCLUSIVE and pair.states is not None and pair.states.span == pytest.approx(
        1.5, rel=0.05), pair
    assert "a whole job in another state" in (pair.blind or "") and suspected(pair)


def test_without_states_seen_or_beyond_their_span_the_verdict_stands(tmp_path: Path) -> None:
    quiet = night_pair(tmp_path / "quiet", False, 1.4, 1.0)
    assert quiet.verdict is Verdict.IMPROVED and not suspected(quiet)
    beyond = night_pair(tmp_path / "beyond", True, 1.0, 3.0)
    assert beyond.verdict is Verdict.REGRESSED and suspected(beyond)


def test_the_store_is_asked_by_every_name_a_program_goes_by(tmp_path: Path) -> None:
    """run --ab's two programs of one model are stored as `mlp-a` and `mlp-b`: what the jobs of either showed counts
    for the pair (app/ab.py run_ab_job), and another model's jobs do not."""
    from orchestrator.app.baseline import device_states_finder
    from orchestrator.verdicts.device_states import has_states

    with open_store(tmp_path / "results.db") as store:
        store.record(RunRecord(job(tmp_path, "run-0", 1, (1.0, 1.0, 1.0, 1.5, 1.5, 1.5))))
        asked = {names: device_states_finder(store, *names)("local", "mlp-b") for names in ((), ("mlp-a", "mlp"),
                                                                                              ("mlp-a", "mlp-b"))}
        own = device_states_finder(store)("local", "mlp")
    assert has_states(own) and own.seen == 1
    assert has_states(asked[("mlp-a", "mlp")]) and asked[("mlp-a", "mlp")].span == own.span
    assert not has_states(asked[()]) and not has_states(asked[("mlp-a", "mlp-b")])


def test_a_series_improvement_within_the_devices_states_is_held_back(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A series' `improved` is never confirmed: within the states the device has shown it is `inconclusive` (the night
    exits 3); beyond them it stands."""
    import orchestrator.app.nightly as nightly

    held = night_pair(tmp_path / "held", True, 1.4, 1.0, nights=5)
    beyond = night_pair(tmp_path / "beyond", True, 3.0, 1.0, nights=5)
    monkeypatch.setattr(nightly, "improvement_held", lambda found, states, threshold: found)
    without = night_pair(tmp_path / "without", True, 1.4, 1.0, nights=5)
    assert without.series is not None and without.series.verdict is Verdict.IMPROVED, without.series
    assert beyond.series is not None and beyond.series.verdict is Verdict.IMPROVED, beyond.series
    assert held.series is not None and held.series.verdict is Verdict.INCONCLUSIVE and held.unjudged, held.series
    assert "a whole job in another state" in (held.series.night.blind or "")
