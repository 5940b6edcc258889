"""app/run.py and app/resume.py: `etfarm run`'s usage errors, said before anything runs (through the CLI's `main`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.app import JobRequest
from orchestrator.cli import main
from orchestrator.run.schedule import RunOrder
from tests.unit.store.rundirs import make_run_dir


@pytest.mark.parametrize(("argv", "message"), [
    (["--order", "random", "--model", "m.py:build"], "--order: expected interleaved or sequential, got 'random'"),
    (["--ab", "a.py:f", "b.py:f", "--model", "m.py:build"], "--ab SPEC_A SPEC_B replaces --model"),
    (["--ab", "a.py:f", "b.py:f", "--center", "median"], "--center: 'median'; choose auto, mean, fast, fast-state"),
    (["--ab", "a.py:f", "b.py:f", "--scheduler", "tcp://x:1"], "--ab runs a new job on one host; drop --scheduler"),
    (["--model", "m.py:build", "--until-confident"], "--until-confident applies to --ab"),
    (["--model", "m.py:build", "--once"], "--once applies to --ab"),
    (["--ab", "a.py:f", "b.py:f", "--once", "--until-confident"], "--until-confident and --once contradict each other"),
    (["--model", "m.py:build", "--junit", "v.xml"], "--junit applies to --ab"),
    (["--ab", "a.py:f", "b.py:f", "--junit", "/nonexistent/v.xml"], "--junit /nonexistent/v.xml: directory /nonexistent"),
    ([], "--model is required (or --resume DIR"),
])
def test_combinations_that_make_no_sense_are_usage_errors(argv: list[str], message: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {message}") and "\n" not in err


def test_an_ab_refusal_names_etfarm_scheduler_when_it_came_from_there(monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ETFARM_SCHEDULER", "tcp://x:1")
    assert main(["run", "--ab", "a.py:f", "b.py:f"]) == 2
    assert "(ETFARM_SCHEDULER is set: unset it for this command)" in capsys.readouterr().err


def test_resume_refuses_options_that_differ_from_the_recorded_ones(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000", devices=("local",), runs=2)
    assert main(["run", "--resume", str(run), "--runs", "7"]) == 2
    assert f"--resume {run}: --runs 7 differs from the recorded 2" in capsys.readouterr().err
    assert main(["run", "--resume", str(run), "--devices", "local,other"]) == 2
    assert "--devices local,other differs from the recorded local" in capsys.readouterr().err
    assert main(["run", "--resume", str(run), "--scheduler", "tcp://x:1"]) == 2
    assert "this run ran on one host, not on a farm; resume it without --scheduler" in capsys.readouterr().err
    assert main(["run", "--resume", str(tmp_path / "nothing")]) == 2
    assert "no manifest.json there (not an etfarm run directory)" in capsys.readouterr().err


def test_the_request_makes_the_run_options() -> None:
    options = JobRequest(runs=3, timeout=9.0, no_wait=True, numerics=True, order="sequential", threads=2).run_options()
    assert (options.runs, options.run_timeout_s, options.wait_for_lock, options.cpu_threads) == (3, 9.0, False, 2)
    assert options.intermediate_outputs and options.numerics and options.debug_buffer_size == 0
    assert options.order is RunOrder.SEQUENTIAL
