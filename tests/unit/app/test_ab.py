"""`run --ab` logic with a fake job runner: ABBA order asked for, names made distinct, and
--until-confident adding jobs only while (and where) the verdict is inconclusive."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from device_agents import DeviceSpec
from orchestrator.app import ab
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.base.errors import UsageError
from orchestrator.base.progress import Progress
from orchestrator.results.limits import UNTIL_CONFIDENT_MAX_RUNS
from orchestrator.results.model import (
    DeviceResult,
    DeviceStatus,
    Job,
    JobConfig,
    JobOptions,
    JobStatus,
    ModelResult,
    ModelStatus,
    ProcessRun,
)
from orchestrator.run.schedule import RunOrder
from orchestrator.verdicts.estimates import Estimate
from orchestrator.verdicts.pair_verdicts import Comparison, PairVerdict
from orchestrator.verdicts.statistics import Verdict, VerdictSettings

LEVELS = {"pixel8": 1.0, "rpi5": 2.0}  # B's speed relative to A per device: same, twice as slow


@dataclass
class FakeRundir:
    root: Path


@dataclass
class FakeJobResult:
    rundir: FakeRundir
    job: Job
    exit_code: int = 0
    interrupted: bool = False


def fake_run_job(calls: list[dict[str, Any]], rng: np.random.Generator, interrupt: bool = False) -> Any:
    def run_job(devices: list[DeviceSpec], specs: list[Any], *, options: JobOptions, out: Path | None, **_: Any) -> Any:
        calls.append({"devices": [d.name for d in devices], "models": [s.name for s in specs], "options": options})
        results = []
        for device in devices:
            models = []
            for spec in specs:
                scale = LEVELS[device.name] if spec.name.endswith("-b") else 1.0  # B by name: jobs take turns to start
                runs = tuple(ProcessRun(f"run-{k}", True, tuple(scale * (1 + 0.15 * rng.random()) * np.ones(5)))
                             for k in range(1, options.runs + 1))
                models.append(ModelResult(spec.name, ModelStatus.OK, runs))
            results.append(DeviceResult(device.name, "local", "host", DeviceStatus.OK, models=tuple(models)))
        job = Job(f"job{len(calls)}", JobStatus.INTERRUPTED if interrupt else JobStatus.OK, "2026-11-22T00:00:00+0000",
                  JobConfig(tuple(d.name for d in devices), tuple(s.text for s in specs), "xnnpack", options),
                  devices=tuple(results))
        return FakeJobResult(FakeRundir(out or Path(f"/nonexistent/job{len(calls)}")), job, interrupted=interrupt)

    return run_job


def model_file(path: Path) -> Any:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("def build(): ...\n")
    return parse_model_spec(f"{path}:build")


def test_until_confident_adds_runs_only_where_undecided(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(ab, "run_job", fake_run_job(calls, np.random.default_rng(0)))
    devices = [DeviceSpec(name, "host", str(tmp_path)) for name in LEVELS]
    spec, other = model_file(tmp_path / "mlp.py"), model_file(tmp_path / "other" / "mlp.py")
    outcome = ab.run_ab(devices, spec, other, backend="xnnpack", options=JobOptions(runs=4), out=tmp_path / "ab",
                        progress=Progress(quiet=True), settings=VerdictSettings(resamples=200),
                        until_confident=True, max_runs=16)
    assert calls[0]["models"] == ["mlp-a", "mlp-b"] and calls[0]["options"].order is RunOrder.ABBA
    verdicts = {p.device: p for p in outcome.comparison.pairs}
    assert verdicts["rpi5"].verdict is Verdict.REGRESSED and verdicts["rpi5"].estimate.runs_b == 4  # decided at once
    # pixel8 (A == B, 15 % noise) starts undecided: more jobs on pixel8 alone until it is decided
    # (unchanged) or has 16 runs per side.
    extra = [c["devices"] for c in calls[1:]]
    assert 1 <= len(extra) <= 3 and set(map(tuple, extra)) == {("pixel8",)}
    # the jobs take turns to start: A B B A ..., then B A A B ..., then A B B A ...
    assert [c["models"] for c in calls] == [["mlp-a", "mlp-b"] if k % 2 == 0 else ["mlp-b", "mlp-a"]
                                            for k in range(len(calls))]
    pixel8 = verdicts["pixel8"]
    assert pixel8.estimate.runs_a == 4 * (1 + len(extra))
    assert pixel8.verdict is Verdict.UNCHANGED or (pixel8.verdict is Verdict.INCONCLUSIVE and pixel8.estimate.runs_a == 16)
    assert outcome.exit_code == 1


def test_the_budget_counts_the_runs_made_not_those_the_estimate_kept(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    """On a busy host a run none of whose executions was clean is left out of the estimate: the estimate then
    keeps fewer runs than the jobs made, and the rounds must still stop when the jobs have made `budget` runs a side
    (a night's confirmation: its interleaved job and at most one more)."""
    calls: list[dict[str, Any]] = []
    run_job = fake_run_job(calls, np.random.default_rng(0))

    def bounded(*args: Any, **kwargs: Any) -> Any:
        assert len(calls) < 10, "the rounds never stop"  # counting kept runs, they did not
        return run_job(*args, **kwargs)

    monkeypatch.setattr(ab, "run_job", bounded)
    undecided = PairVerdict("pixel8", "mlp-a", "mlp-b", Verdict.INCONCLUSIVE,
                            Estimate(1.0, 0.8, 1.25, 0.5, runs_a=1, runs_b=1, median_a_ms=1.0, median_b_ms=1.0))
    monkeypatch.setattr(ab, "ab_comparison", lambda *args, **kwargs: Comparison("mlp-a", "mlp-b", VerdictSettings(),
                                                                                 (undecided,)))
    devices = [DeviceSpec("pixel8", "host", str(tmp_path))]
    spec, other = model_file(tmp_path / "mlp.py"), model_file(tmp_path / "other" / "mlp.py")
    for budget, jobs in ((8, 2), (16, 4), (4, 1)):
        calls.clear()
        ab.run_ab(devices, spec, other, backend="xnnpack", options=JobOptions(runs=4), out=tmp_path / f"ab{budget}",
                  progress=Progress(quiet=True), settings=VerdictSettings(resamples=200), until_confident=True,
                  max_runs=budget)
        assert len(calls) == jobs, (budget, len(calls))  # every job made 4 runs a side; the estimate kept 1


def test_the_same_spec_twice_is_a_usage_error(tmp_path: Path) -> None:
    spec = model_file(tmp_path / "mlp.py")
    with pytest.raises(UsageError, match="same spec"):
        ab.ab_specs(spec, spec)


def test_an_interrupted_job_ends_the_rounds_and_its_sides_are_named(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    """Ctrl-C stops the A/B job: no further --until-confident job starts, and each pair says its sides are
    incomplete instead of giving a verdict without a word."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(ab, "run_job", fake_run_job(calls, np.random.default_rng(0), interrupt=True))
    devices = [DeviceSpec(name, "host", str(tmp_path)) for name in LEVELS]
    spec, other = model_file(tmp_path / "mlp.py"), model_file(tmp_path / "other" / "mlp.py")
    outcome = ab.run_ab(devices, spec, other, backend="xnnpack", options=JobOptions(runs=4), out=tmp_path / "ab",
                        progress=Progress(quiet=True), settings=VerdictSettings(resamples=200),
                        until_confident=True, max_runs=16)
    assert len(calls) == 1  # pixel8 stays undecided on 4 runs, and still no second job starts
    for pair in outcome.comparison.pairs:
        assert [(i.side, i.source) for i in pair.incomplete] == [("A", "job1"), ("B", "job1")]
        assert "its job was interrupted" in pair.incomplete[0].why


@pytest.mark.parametrize(("flags", "pooled"), [((), True), (("--until-confident",), True), (("--once",), False)])
def test_run_ab_pools_until_confident_unless_told_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        flags: tuple[str, ...], pooled: bool) -> None:
    """A user's `run --ab` pools further jobs while a verdict is inconclusive (one job of 10 runs a side saw +10 %
    in 38 % of quiet pairs, pooling in 100 %: docs/guide/trust.md); `--once` is one job."""
    from orchestrator.cli import main

    asked: dict[str, Any] = {}

    def stop(*args: Any, **kwargs: Any) -> None:
        asked.update(kwargs)
        raise UsageError("stopped before any job")

    monkeypatch.setattr(ab, "run_ab", stop)
    spec, other = model_file(tmp_path / "mlp.py"), model_file(tmp_path / "other" / "mlp.py")
    argv = ["run", "--ab", spec.text, other.text, "--out", str(tmp_path / "o")]
    assert main([*argv, *flags]) == 2
    assert asked["until_confident"] is pooled and asked["max_runs"] == UNTIL_CONFIDENT_MAX_RUNS == 80


@pytest.mark.parametrize(("ratio", "span", "jobs"), [(1.41, 1.5, 2), (1.41, None, 1), (3.0, 1.5, 1)])
def test_a_confirmation_within_the_devices_speed_states_must_show_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                      ratio: float, span: float | None, jobs: int) -> None:
    """A night's confirmation (`states` given): one interleaved job that reads `regressed` within the span of the
    speed states the device has shown is pooled once more, and what the pooled jobs say stands; a device that has
    shown none, or a change beyond the span, is decided by its one job, as before."""
    from orchestrator.verdicts.device_states import DeviceStates

    calls: list[dict[str, Any]] = []
    run_job = fake_run_job(calls, np.random.default_rng(0))
    pairs = iter([ratio, 1.01])  # the first job's ratio, then the pooled jobs' (the states averaged out)

    def comparison(*_: Any, **__: Any) -> Comparison:
        r = next(pairs)
        verdict = Verdict.REGRESSED if r > 1.05 else Verdict.UNCHANGED
        return Comparison("mlp-a", "mlp-b", VerdictSettings(), (PairVerdict(
            "pixel8", "mlp-a", "mlp-b", verdict, Estimate(r, r * 0.97, r * 1.03, 0.001, runs_a=4, runs_b=4,
                                                          median_a_ms=1.0, median_b_ms=r)),))

    monkeypatch.setattr(ab, "ab_comparison", comparison)
    device = DeviceSpec("pixel8", "host", "/nonexistent")
    spec, other = model_file(tmp_path / "a" / "mlp.py"), model_file(tmp_path / "b" / "mlp.py")

    def more(devices: Any, k: int) -> Any:
        return run_job([device], ab.starting_side(spec, other, k), options=JobOptions(runs=4), out=None)

    seen = DeviceStates("pixel8", span, split=1, seen=3) if span else DeviceStates.nothing_seen("pixel8")
    first = [more(["pixel8"], 0)]
    found = ab.pool_until_confident(first, comparison(), VerdictSettings(), 80, 4, more, Progress(quiet=True),
                                    lambda device, model: seen)
    assert len(first) == jobs == len(calls)
    assert found.pairs[0].verdict is (Verdict.UNCHANGED if jobs == 2 else Verdict.REGRESSED)


def test_run_ab_json_prints_the_verdicts_as_compare_does_and_nothing_else_on_stdout(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`run --ab --json` printed the table, as if --json were not given: a CI script reading stdout as JSON failed.
    Now stdout is the verdicts' JSON (`compare --json`'s document); where the jobs and the page are goes to stderr."""
    import json

    from orchestrator.base.codec import encode
    from orchestrator.cli import main

    calls: list[dict[str, Any]] = []
    job = fake_run_job(calls, np.random.default_rng(0))([DeviceSpec("pixel8", "host", str(tmp_path))], [],
                                                         options=JobOptions(runs=4), out=tmp_path / "job")
    pair = PairVerdict("pixel8", "mlp-a", "mlp-b", Verdict.UNCHANGED,
                       Estimate(1.0, 0.98, 1.02, 0.9, runs_a=4, runs_b=4, median_a_ms=1.0, median_b_ms=1.0))
    comparison = Comparison("mlp-a", "mlp-b", VerdictSettings(), (pair,))
    monkeypatch.setattr(ab, "run_ab", lambda *args, **kwargs: ab.AbOutcome((job,), comparison))
    monkeypatch.setattr(ab, "write_ab_page", lambda *args, **kwargs: tmp_path / "job" / "report-ab.html")
    monkeypatch.setattr(ab, "load_inventory", lambda config: SimpleNamespace(select=lambda names: [], path=None))
    spec, other = model_file(tmp_path / "mlp.py"), model_file(tmp_path / "other" / "mlp.py")
    argv = ["run", "--ab", spec.text, other.text, "--out", str(tmp_path / "o"), "--no-store"]
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == json.loads(json.dumps(encode(comparison)))
    assert f"run directory: {tmp_path / 'job'}" in err and "A/B page: " in err
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    assert "pixel8" in out and f"run directory: {tmp_path / 'job'}" in out and not out.lstrip().startswith("{")
