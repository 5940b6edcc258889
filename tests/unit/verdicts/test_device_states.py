"""A device's speed states learned from its stored jobs (verdicts/device_states.py), and the rule that holds back a
change between separate jobs that a state step could make (trust.state_step), on recorded jobs of two VMs."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from orchestrator.verdicts.compare import Comparison, compare_sides
from orchestrator.verdicts.device_states import DeviceStates, device_states, has_states, state_span
from orchestrator.verdicts.estimates import run_medians
from orchestrator.verdicts.statistics import Verdict, VerdictSettings
from orchestrator.verdicts.trust import JOB_SHIFT_SD
from tests.helpers.noise_corpus import CORPUS, CORPUS_STATES, load, slowed, stored_states
from tests.unit.store.rundirs import make_run_dir

SETTINGS = VerdictSettings(resamples=500, job_shift=JOB_SHIFT_SD)  # compare's
NOTHING = DeviceStates.nothing_seen("local")


def stored(path: Path) -> DeviceStates:
    """What a store of the recording's separate jobs shows (as `etfarm compare` reads it)."""
    return stored_states(load(path))


def test_a_job_whose_runs_split_gives_the_span_from_its_fastest_to_its_slowest_state_of_two_runs() -> None:
    assert state_span([1.0, 1.01, 0.99, 1.9, 1.92, 1.88]) == pytest.approx(1.9, rel=0.01)
    assert state_span([1.0, 1.01, 1.4, 1.41, 2.5]) == pytest.approx(1.4, rel=0.01)  # one run at 2.5x is no state
    assert state_span([1.0, 1.01, 0.99, 1.02]) is None  # one state
    assert state_span([1.0, 1.3, 1.7, 2.2]) is None  # a state of one run each: spread, not states


def test_jobs_are_counted_once_and_one_split_job_is_enough() -> None:
    split, flat = [1.0, 1.0, 1.6, 1.6], [1.0, 1.01, 1.02]
    found = device_states(NOTHING, [("j1", flat), ("j2", split), ("j2", split)])
    assert (found.seen, found.split, found.span, found.jobs) == (2, 1, pytest.approx(1.6), ("j1", "j2"))
    assert has_states(found) and not has_states(device_states(NOTHING, [("j1", flat)]))
    assert found.describe() == "local has run whole processes of this model up to 1.60x apart (speed states in 1 of 2 jobs)"


def test_the_first_vm_s_separate_jobs_show_no_states_and_the_second_s_show_two_fold_ones() -> None:
    assert not has_states(stored(CORPUS))  # 70 jobs, five environments: none split
    states = stored(CORPUS_STATES)
    assert states.split >= 10 and states.seen == 30 and 1.8 < states.span < 2.2


def test_a_whole_job_one_state_up_is_not_a_regression_a_change_beyond_the_states_is() -> None:
    states = stored(CORPUS_STATES)
    quiet = [r.sides["cnn"] for r in load(CORPUS_STATES) if r.env == "quiet" and r.kind == "job"]
    a, b = quiet[0], quiet[5]  # both wholly in the fast state
    up = slowed(b, 1.405)  # what `compare` saw live: a whole job one state up, its runs in agreement
    assert compare_sides(a, up, SETTINGS).verdict is Verdict.REGRESSED  # without the device's past
    pair = compare_sides(a, up, SETTINGS, states=states)
    assert pair.verdict is Verdict.INCONCLUSIVE and not pair.regressed and not pair.regressed_ops
    assert pair.blind.startswith(f"regressed {pair.estimate.ratio:.3f}x, but {states.describe()}: ")
    assert pair.settle is None or pair.settle.startswith("etfarm run --ab ")
    assert Comparison(a.source, up.source, SETTINGS, (pair,)).exit_code == 3
    beyond = compare_sides(a, slowed(b, 3.0), SETTINGS, states=states)
    assert beyond.verdict is Verdict.REGRESSED  # no state step makes 3x
    same = compare_sides(a, b, SETTINGS, states=states)
    assert same.verdict is compare_sides(a, b, SETTINGS).verdict is not Verdict.REGRESSED  # only a change is held


def test_the_sides_own_runs_show_the_states_without_a_store() -> None:
    jobs = {r.index: r.sides["cnn"] for r in load(CORPUS_STATES) if r.kind == "job"}
    a, b = jobs[0], jobs[36]  # one state; bursty job 36: 5 runs fast and 5 at 1.91x
    assert has_states(device_states(NOTHING, [(b.source, run_medians(b.e2e))]))
    pair = compare_sides(a, slowed(b, 1.5), SETTINGS, states=NOTHING)
    assert pair.verdict is not Verdict.REGRESSED


@pytest.mark.parametrize("env", ["blas", "bursty"])
def test_with_the_store_identical_jobs_on_the_second_vm_are_never_regressed(env: str) -> None:
    states = stored(CORPUS_STATES)
    jobs = [r.sides["cnn"] for r in load(CORPUS_STATES) if r.env == env and r.kind == "job"]
    for a, b in itertools.permutations(jobs, 2):
        for factor in (1.0, 1.2, 1.4, 1.7):  # a job one state up, as on the live machine: 1.405x
            pair = compare_sides(a, slowed(b, factor), SETTINGS, per_op=factor == 1.0, states=states)
            assert not pair.regressed, (env, a.source, b.source, factor, pair.verdict)


def test_the_store_gives_each_stored_job_s_traced_run_medians(tmp_path: Path) -> None:
    with open_store(tmp_path / "results.db") as store:
        for k in range(3):
            store.record(RunRecord(make_run_dir(tmp_path / "runs", f"run-{k}", f"2026-01-0{k + 1}T00:00:00+0000",
                                                devices=("local",), runs=3, iterations=5)))
        found = dict(store.run_medians("local", "mlp", limit=2))
        assert sorted(found) == ["run-1", "run-2"]  # the newest two
        # make_run_dir's traced run k: 0.1 + 0.01 i + 0.001 k over 5 executions, median at i = 2; untraced runs left out
        assert found["run-2"] == pytest.approx((0.121, 0.122, 0.123))
        assert store.run_medians("rpi5", "mlp", limit=5) == [] and store.run_medians("local", "cnn", limit=5) == []


def test_a_pair_s_json_says_what_the_device_showed_without_listing_its_jobs() -> None:
    from orchestrator.base.codec import encode

    found = device_states(NOTHING, [("j1", [1.0, 1.0, 1.6, 1.6]), ("j2", [1.0, 1.01])])
    assert encode(found) == {"device": "local", "span": pytest.approx(1.6), "jobs_split": 1, "jobs_seen": 2}
    quiet = [r.sides["cnn"] for r in load(CORPUS_STATES) if r.env == "quiet" and r.kind == "job"]
    pair = compare_sides(quiet[0], quiet[5], SETTINGS, per_op=False, states=found)
    assert encode(pair)["speed_states"] == {"device": "local", "span": pytest.approx(1.6), "jobs_split": 1, "jobs_seen": 4}
    assert encode(compare_sides(quiet[0], quiet[5], SETTINGS, per_op=False))["speed_states"] is None  # not looked at


def test_two_named_runs_are_compared_beside_a_store_that_cannot_be_read(tmp_path: Path, capsys) -> None:
    from orchestrator.app.baseline import compare_refs

    runs = [make_run_dir(tmp_path / "runs", f"run-{k}", f"2026-01-0{k + 1}T00:00:00+0000", devices=("local",), runs=3)
            for k in range(2)]
    broken = tmp_path / "results.db"
    broken.write_text("not a database")
    found = compare_refs(str(runs[0]), str(runs[1]), SETTINGS, store=broken, per_op=False)
    (pair,) = found.pairs
    assert pair.states == DeviceStates("local", 1.0, 0, 2, ("run-0", "run-1"))  # the two runs alone were seen
    assert f"warning: {broken}: not a usable etfarm store" in capsys.readouterr().err
    with open_store(tmp_path / "good.db") as store:
        for run in runs:
            store.record(RunRecord(run))
    (pair,) = compare_refs(str(runs[0]), str(runs[1]), SETTINGS, store=tmp_path / "good.db", per_op=False).pairs
    assert pair.states is not None and pair.states.seen == 2  # stored and compared: each job counted once
