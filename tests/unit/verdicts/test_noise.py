"""The automatic noise floor: the estimator on synthetic histories, which stored runs it reads, and
how the floor reaches verdicts, tables, JSON and the command line (real SQLite store, synthetic runs)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from orchestrator.app.baseline import good_history, history_noise_finder, last_good_finder, series_history
from orchestrator.base.cache import write_json_atomic
from orchestrator.base.codec import encode
from orchestrator.base.errors import UsageError
from orchestrator.cli import main
from orchestrator.cli.compare import parse_noise_floor
from orchestrator.report.terminal.verdicts import verdict_markdown, verdict_table
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.results.verdicts_file import VERDICTS_JSON
from orchestrator.store import open_store
from orchestrator.verdicts.compare import Comparison, Side, compare_sides
from orchestrator.verdicts.noise import COVERAGE, MIN_JOBS, NoiseFloor, estimate_floor, estimate_replicate_floor
from orchestrator.verdicts.sides import SideRun
from orchestrator.verdicts.statistics import Verdict, VerdictSettings
from tests.unit.store.rundirs import make_run_dir

Z = 1.959963984540054  # normal 97.5 % quantile


def test_known_job_spread_gives_the_95_percent_bound_of_the_ratio_between_jobs() -> None:
    """Jobs whose log statistic is N(0, s^2): the ratio of two jobs has log sd s*sqrt(2); the floor is its 95 % bound."""
    rng = np.random.default_rng(1)
    for s in (0.02, 0.08):
        found = estimate_floor(np.exp(s * rng.standard_normal(4000)).tolist())
        assert found.floor == pytest.approx(math.expm1(Z * s * math.sqrt(2)), rel=0.06)
        assert found.jobs == 4000
        # the claim itself: new pairs of identical jobs stay inside the floor ~95 % of the time
        pairs = np.exp(s * rng.standard_normal((20000, 2)))
        outside = np.mean(np.abs(np.log(pairs[:, 1] / pairs[:, 0])) > math.log1p(found.floor))
        assert 0.03 < outside < 0.07


def test_window_sized_history_is_in_the_right_range() -> None:
    """20 jobs (the default window) at 5 % job-to-job noise: the floor is near 14 %, never 0 or 50 %."""
    floors = [estimate_floor(np.exp(0.05 * np.random.default_rng(seed).standard_normal(20)).tolist()).value
              for seed in range(200)]
    assert 0.10 < float(np.median(floors)) < 0.18
    assert min(floors) > 0.03 and max(floors) < 0.40


def test_too_short_history_gives_no_floor() -> None:
    found = estimate_floor([1.0, 1.2, 0.9, 1.1, 1.0])
    assert found.floor is None and found.jobs == 5 and found.value == 0.0
    assert found.describe() == f"none (5 of {MIN_JOBS} runs)"
    assert estimate_floor([]).floor is None
    assert estimate_floor([1.0, 1.1, 0.9, 1.2, 1.0, 1.1]).floor is not None  # six is enough
    # unusable values (no samples, 0) do not count as history
    assert estimate_floor([1.0, 1.1, 0.9, 1.2, 1.0, 0.0, float("nan")]).floor is None


def test_a_step_or_an_outlier_in_history_does_not_make_the_floor_huge() -> None:
    rng = np.random.default_rng(3)
    steady = np.exp(0.02 * rng.standard_normal(20))
    calm = estimate_floor(steady.tolist()).value
    stepped = steady * np.r_[np.ones(10), 2.0 * np.ones(10)]  # a deliberate 2x change, accepted as the new baseline
    outlier = steady.copy()
    outlier[12] *= 1.9  # one job stuck in a slow state
    assert estimate_floor(stepped.tolist()).value < 1.5 * calm  # one large step among 19
    assert estimate_floor(outlier.tolist()).value < 2 * calm  # two (in and out): still far below the 90 % outlier
    assert calm < 0.15
    sd_floor = math.expm1(Z * float(np.std(np.diff(np.log(outlier)), ddof=1)))
    assert sd_floor > 0.5  # what a floor from the plain standard deviation would have made of it


def test_identical_jobs_give_a_zero_floor() -> None:
    assert estimate_floor([2.0] * 8).floor == 0.0


# ---- which stored runs count ----------------------------------------------------------------


def scaled(run_dir: Path, factor: float, **options: int) -> Path:
    """Scale every execute sample of the run by `factor` (a whole job shifted), optionally other settings."""
    job = load_manifest(run_dir)
    devices = tuple(dataclasses.replace(d, models=tuple(dataclasses.replace(m, runs=tuple(
        dataclasses.replace(r, execute_ms=tuple(factor * v for v in r.execute_ms)) for r in m.runs)) for m in d.models))
        for d in job.devices)
    config = job.config
    if options:
        config = dataclasses.replace(config, options=dataclasses.replace(config.options, **options))
    write_json_atomic(run_dir / "manifest.json", dataclasses.replace(job, devices=devices, config=config).to_dict())
    return run_dir


FACTORS = [1.0, 1.1, 0.95, 1.05, 1.0, 1.12, 0.97, 1.03]


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A real SQLite store with 8 runs of mlp on `local` whose jobs shift by FACTORS, and run B after them."""
    db = tmp_path / "results.db"
    dirs = []
    with open_store(db) as store:
        for k, factor in enumerate(FACTORS):
            dirs.append(scaled(make_run_dir(tmp_path / "runs", f"run-{k}", f"2026-01-0{k + 1}T00:00:00+0000",
                                            devices=("local",), runs=3, iterations=4), factor))
            store.record(RunRecord(dirs[-1]))
        dirs.append(make_run_dir(tmp_path / "runs", "run-b", "2026-01-20T00:00:00+0000", devices=("local",), runs=3,
                                 iterations=4))
        store.record(RunRecord(dirs[-1]))
    return db, dirs


def statistic(run_dir: Path) -> float:
    result = load_manifest(run_dir).device("local").model("mlp")  # type: ignore[union-attr]
    return float(np.mean([np.median(r.execute_ms) for r in result.traced_runs]))  # type: ignore[union-attr]


def test_history_floor_reads_the_good_stored_runs_before_b(history: tuple[Path, list[Path]]) -> None:
    db, dirs = history
    job_b = load_manifest(dirs[-1])
    with open_store(db) as store:
        found = history_noise_finder(store, job_b, "mean")("local", "mlp")
        assert found.jobs == len(FACTORS) and found.auto
        # one model content, no change point: every stored job is a replicate of the others
        stats = [statistic(d) for d in dirs[:-1]]
        assert found.method == "replicates" and found.groups == 1
        assert found.floor == pytest.approx(estimate_replicate_floor(stats, [None] * len(stats)).floor)
        assert found.floor > 0.05  # these jobs shift by up to 12 %
        assert [r.root.name for r in good_history(store, job_b, "local", "mlp")] == [d.name for d in dirs[-2::-1]]
        assert history_noise_finder(store, job_b, "mean", window=3)("local", "mlp").floor is None  # 3 < 6


def test_regressed_and_other_settings_runs_are_not_history(history: tuple[Path, list[Path]]) -> None:
    db, dirs = history
    write_json_atomic(dirs[5] / VERDICTS_JSON, {"pairs": [{"device": "local", "model_b": "mlp", "regressed": True}]})
    scaled(dirs[6], 1.0, iterations=99)  # different settings: not comparable
    with open_store(db) as store:
        store.record(RunRecord(dirs[6]))
        found = history_noise_finder(store, load_manifest(dirs[-1]), "mean")("local", "mlp")
        assert found.jobs == len(FACTORS) - 2
        kept = [d for k, d in enumerate(dirs[:-1]) if k not in (5, 6)]
        stats = [statistic(d) for d in kept]
        assert found.floor == pytest.approx(estimate_replicate_floor(stats, [None] * len(stats)).floor)
        # ...and too few good runs left: no floor, and the verdict table says so
        write_json_atomic(dirs[4] / VERDICTS_JSON, {"pairs": [{"device": "local", "model_b": "mlp", "regressed": True}]})
        assert history_noise_finder(store, load_manifest(dirs[-1]), "mean")("local", "mlp").floor is None


def test_last_good_passes_over_nights_left_inconclusive_for_one_that_judged(history: tuple[Path, list[Path]]) -> None:
    """A night that could not judge its pair (a +5 % step it could not see) is no later night's baseline while a
    judged night is near; the series still reads it; when no night was judged, the newest good run."""
    db, dirs = history
    unjudged = {"pairs": [{"device": "local", "model_b": "mlp", "verdict": "inconclusive"}]}
    for d in dirs[5:8]:
        write_json_atomic(d / VERDICTS_JSON, unjudged)
    write_json_atomic(dirs[4] / VERDICTS_JSON, {"pairs": [{"device": "local", "model_b": "mlp", "verdict": "unchanged"}]})
    job_b = load_manifest(dirs[-1])
    with open_store(db) as store:
        assert last_good_finder(store, job_b)("local", "mlp").root == dirs[4]  # type: ignore[union-attr]
        assert [r.root for r in good_history(store, job_b, "local", "mlp")][:4] == dirs[7:3:-1]  # the series: all
        for d in dirs[:5]:
            write_json_atomic(d / VERDICTS_JSON, unjudged)
        assert last_good_finder(store, job_b)("local", "mlp").root == dirs[7]  # type: ignore[union-attr]


def test_a_nights_confirmation_jobs_are_no_series_points_of_their_own(history: tuple[Path, list[Path]],
                                                                      tmp_path: Path) -> None:
    """A job that ran `mlp-baseline` beside `mlp` re-measured a night: the night is one point of the series (and of
    the noise floor's replicates), however many jobs settled it, and the night's own job is its last good run."""
    db, dirs = history
    confirmation = scaled(make_run_dir(tmp_path / "runs", "run-8c", "2026-01-09T12:00:00+0000", devices=("local",),
                                       models=("mlp-baseline", "mlp"), runs=3, iterations=4), 0.8)
    job_b = load_manifest(dirs[-1])
    with open_store(db) as store:
        store.record(RunRecord(confirmation))
        assert [p.run_id for p in series_history(store, job_b, "local", "mlp")] == [d.name for d in dirs[:-1]]
        # the night's own job, not the job that confirmed it (the same program and verdict)
        assert last_good_finder(store, job_b)("local", "mlp").root == dirs[-2]  # type: ignore[union-attr]


# ---- how the floor reaches the verdict -------------------------------------------------------


def side(level: float, seed: int, source: str) -> Side:
    rng = np.random.default_rng(seed)
    return Side(source, "pixel8", "mlp", tuple(SideRun(f"run-{k}", tuple(level * (1 + 0.01 * rng.standard_normal(10))),
                                                       None) for k in range(12)))


def test_a_floor_widens_both_thresholds_and_is_shown() -> None:
    settings = VerdictSettings(resamples=300, auto_noise_floor=True)
    a, b = side(1.0, 1, "run-a"), side(1.08, 2, "run-b")
    assert compare_sides(a, b, settings).verdict is Verdict.REGRESSED  # no floor: 8 % > 5 %
    pair = compare_sides(a, b, settings, noise=NoiseFloor(0.12, jobs=14))
    assert (pair.threshold, pair.op_threshold) == (0.12, 0.12)
    assert pair.verdict is Verdict.INCONCLUSIVE  # inside the device's noise, but not inside 5 %: not "unchanged"
    same = compare_sides(a, side(1.0, 3, "run-b"), settings, noise=NoiseFloor(0.12, jobs=14))
    assert same.verdict is Verdict.UNCHANGED
    none = compare_sides(a, b, settings, noise=NoiseFloor(None, jobs=3))
    assert none.verdict is Verdict.REGRESSED and none.threshold == 0.05
    comparison = Comparison("last-good", "run-b", settings, (pair, none))
    table = verdict_table(comparison)
    assert "12.0% (14 runs)" in table and f"none (3 of {MIN_JOBS} runs)" in table and "noise floor" in table
    assert f"the {COVERAGE:.0%} bound" in table and "| 12.0% (14 runs) |" in verdict_markdown(comparison)
    data = json.loads(json.dumps(encode(comparison)))
    assert data["settings"]["auto_noise_floor"] is True
    assert data["pairs"][0]["noise_floor"] == {"floor": 0.12, "source": "auto", "stored_runs": 14,
                                               "min_stored_runs": MIN_JOBS, "coverage": COVERAGE,
                                               "method": "consecutive", "replicate_groups": 0}
    assert data["pairs"][1]["noise_floor"]["floor"] is None and data["pairs"][1]["threshold"] == 0.05


def test_a_floor_set_by_hand_is_shown_as_set() -> None:
    pair = compare_sides(side(1.0, 1, "a"), side(1.0, 2, "b"), VerdictSettings(resamples=300, noise_floor=0.03))
    assert pair.noise == NoiseFloor(0.03, auto=False) and pair.noise.describe() == "3.0% (set)"


@pytest.mark.parametrize(("text", "expected"), [("auto", (True, 0.0)), ("AUTO", (True, 0.0)), ("3", (False, 0.03)),
                                                ("2.5%", (False, 0.025)), ("0", (False, 0.0))])
def test_noise_floor_option_forms(text: str, expected: tuple[bool, float]) -> None:
    assert parse_noise_floor(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["lots", "-1", "100", "nan", ""])
def test_bad_noise_floor_option_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="--noise-floor"):
        parse_noise_floor(text)


def test_bad_noise_floor_on_the_command_line_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--noise-floor", "lots", "--store", str(tmp_path / "x.db")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ") and "--noise-floor" in line and "'lots'" in line and "auto" in line


def test_auto_without_a_store_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run_dir(tmp_path, "run-a", "2026-01-01T00:00:00+0000")
    b = make_run_dir(tmp_path, "run-b", "2026-01-02T00:00:00+0000")
    assert main(["compare", str(a), str(b), "--noise-floor", "auto", "--store", str(tmp_path / "none.db")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "--noise-floor auto needs a results store" in line



def test_compare_a_b_with_auto_reads_b_s_history(history: tuple[Path, list[Path]],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    db, dirs = history
    code = main(["compare", str(dirs[2]), str(dirs[-1]), "--noise-floor", "auto", "--store", str(db), "--json",
                 "--no-ops"])
    data = json.loads(capsys.readouterr().out)
    assert code == data["exit_code"] and data["a"] == "run-2" and data["settings"]["auto_noise_floor"] is True
    assert code == {"regressed": 1, "inconclusive": 3}.get(data["pairs"][0]["verdict"], 0)  # 3: could not judge
    (pair,) = data["pairs"]
    assert pair["source_a"] == "run-2"  # A as given; the floor from B's history: every good run before B
    assert pair["noise_floor"]["stored_runs"] == len(FACTORS) and pair["threshold"] == pytest.approx(
        max(0.05, pair["noise_floor"]["floor"]))
