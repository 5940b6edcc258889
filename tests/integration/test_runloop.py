"""The run loop against real peers: device sessions per process run, memory, interference flags.

- A real sshd (LogLevel VERBOSE) counts the sessions a whole job opens: at most one per
  process run, at most four fixed per job. With the persistent device shell it is fewer: the
  shell (connect, staging, every process run) and the SFTP session for the pushes.
- A real busy loop on the runner's pinned core, started mid-job, makes the later runs' executions contended.
- The persistent device shell (one SSH session for every process run), and a job over adb.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from device_agents import DeviceSpec, create_agent
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.base.progress import Progress
from orchestrator.profiles.stat_rows import read_stats_csv
from orchestrator.results.model import JobOptions, load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.run.engine.job import run_job
from tests.helpers.busy import REALTIME_RUNNER, busy_loop, realtime_available
from tests.helpers.tools import missing

REPO = Path(__file__).resolve().parents[2]
MLP = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"
CNN = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"
FIXED_SESSIONS_MAX = 4
CORE = "1"

pytestmark = pytest.mark.slow


def test_one_session_per_process_run(ssh_server_factory: Callable[[], object], tmp_path: Path) -> None:
    host = ssh_server_factory()
    spec = host.spec("counted", tmp_path / "workdir")  # type: ignore[attr-defined]
    options = JobOptions(runs=3, iterations=3, warmup=1, untraced_runs=1)
    specs = [parse_model_spec(MLP), parse_model_spec(CNN)]
    before = len(host.sessions())  # type: ignore[attr-defined]
    result = run_job([spec], specs, backend="xnnpack", options=options, out=tmp_path / "fresh",
                     progress=Progress(quiet=True))
    assert result.exit_code == 0, result.job.devices[0].error
    sessions = host.sessions()[before:]  # type: ignore[attr-defined]
    process_runs = sum(len(m.runs) for _, m in result.job.results())
    assert process_runs == 2 * (3 + 1)
    assert len(sessions) <= process_runs + FIXED_SESSIONS_MAX, "\n".join(sessions)
    assert len(sessions) <= 2, "\n".join(sessions)  # one shell for every command, one SFTP session
    # Everything a process run needs came back over its one session: artifacts, facts, memory.
    for _, model in result.job.results():
        for run in model.runs:
            assert run.device_state.facts is not None and run.device_state.facts.cores >= 1  # type: ignore[operator]
            assert run.peak_rss_kb and run.peak_rss_kb > 1000
            assert run.step_ms is not None and run.runner_ms is not None
        assert [r.cold for r in model.runs].count(True) == 1
    etdumps = sorted((tmp_path / "fresh" / "counted" / "tiny_cnn").glob("run-*/etdump.etdp"))
    assert len(etdumps) == 3

    # Warm: nothing to push, so no SFTP session and no finalize either.
    before = len(host.sessions())  # type: ignore[attr-defined]
    again = run_job([spec], specs, backend="xnnpack", options=options, out=tmp_path / "warm",
                    progress=Progress(quiet=True))
    assert again.exit_code == 0
    assert len(host.sessions()) - before == 1  # type: ignore[attr-defined]  # the shell


def _pinned_realtime(tmp_path: Path, name: str) -> DeviceSpec:
    """`local` pinned to core 1 under SCHED_FIFO: no ordinary process of a shared machine can take its core, so
    its runs without the test's busy loop are a known-quiet reference (tests/helpers/busy.py)."""
    if (os.cpu_count() or 1) < 2:
        missing("needs a second core for the job itself (the testbed machine has 2)")
    why = realtime_available()
    if why is not None:
        missing(why)
    return DeviceSpec(name, "host", str(tmp_path / f"{name}-workdir"), cpus=CORE, threads=1,
                      exec_prefix=REALTIME_RUNNER)


def test_a_busy_loop_on_the_pinned_core_makes_executions_contended(tmp_path: Path) -> None:
    """Runs 2 and 3 share the runner's core with a real-time loop of higher priority that takes 9 ms of every 10: the
    runner measures the wait (contention per execution, every run), the executions the loop preempted are contended
    and left out of the statistics, and the report says how many. Deterministic on a loaded machine: the loop
    preempts the runner at the start of each of its 9 ms spins, and a run of 20 executions (~0.3 ms each, only in the
    loop's 1 ms gaps) spans several spins, each taking the core mid-execution; whatever the host's other work does,
    it cannot take the core from either. How long the waits are is not asserted (a timing outcome), only that the
    preempted executions are seen and dropped, and that run 1 (before the loop) was measured too."""
    spec = _pinned_realtime(tmp_path, "pinned")
    busy: list[subprocess.Popen[bytes]] = []

    class StartBusyLoop(Progress):
        """Starts the busy loop on the pinned core as soon as the job's first run is done."""

        def __call__(self, message: str, device: str | None = None) -> None:
            if "run 2/" in message and not busy:
                busy.append(busy_loop(CORE, realtime=True, spin_s=0.009, sleep_s=0.001))

    options = JobOptions(runs=3, iterations=20, warmup=2, untraced_runs=0, cpu_threads=1)
    try:
        result = run_job([spec], [parse_model_spec(CNN)], backend="xnnpack", options=options, out=tmp_path / "out",
                         progress=StartBusyLoop(quiet=True))
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    assert busy, "the job never reached run 2"
    assert result.exit_code == 0, result.job.devices[0].error
    model = load_manifest(tmp_path / "out").device("pinned").model("tiny_cnn")  # type: ignore[union-attr]
    assert model is not None
    first, *later = model.runs
    for run in model.runs:  # measured per execution in every run, the calibration workload retired
        assert run.contention is not None and len(run.contention.wait_ms) == 20, run.label
        assert run.contention.threads is not None and run.contention.threads >= 1
        assert run.calibration_before_ms is None and run.flag is None
    for run in later:
        assert run.contention is not None and sum(run.contention.wait_ms) > 0, run.label
        assert not all(run.clean), (run.label, run.contention.wait_ms)
        assert run.contention.involuntary_switches, run.label  # the loop preempted it
    dropped = model.contention_summary.contended
    assert dropped > 0 and len(model.clean_wall_execute_ms) == 60 - dropped
    rows = read_stats_csv(tmp_path / "out" / "stats.csv")
    execute = next(r for r in rows if r.event_name == "Method::execute")
    assert execute.contended_samples == dropped and execute.samples == 60 - dropped
    from orchestrator.report.builders.report import build_report
    from orchestrator.report.page.sections import run_page
    from orchestrator.report.render.markdown import render_markdown

    page = render_markdown(run_page(build_report(RunRecord(tmp_path / "out"))))
    trust = page[page.index("### What to trust"):page.index("### Model")]
    assert f"{dropped} of 60 executions waited for a CPU" in trust


def test_a_quiet_pinned_device_has_its_stability_computed_and_reported(tmp_path: Path) -> None:
    """The same device and model with nothing else on its core: the job computes the within-run and between-run
    spread of its traced runs and reports the stability flag from them, in the manifest and on the terminal.
    Whether the flag fires is a measured outcome (benchmarks/README.md "Stability": 0 of 36 such jobs of this model
    fired on the shared benchmark host) and not asserted here: tests/unit/report/test_report.py holds the rule on
    fixed samples (a calm run does not fire, a wide one does)."""
    import json
    from statistics import median

    from orchestrator.base.stats import spread
    from orchestrator.report.terminal.summary import wall_clock_lines

    spec = _pinned_realtime(tmp_path, "quiet")
    options = JobOptions(runs=3, iterations=20, warmup=2, untraced_runs=0, cpu_threads=1)
    result = run_job([spec], [parse_model_spec(CNN)], backend="xnnpack", options=options, out=tmp_path / "out",
                     progress=Progress(quiet=True))
    assert result.exit_code == 0, result.job.devices[0].error
    job = load_manifest(tmp_path / "out")
    model = job.device("quiet").model("tiny_cnn")  # type: ignore[union-attr]
    assert model is not None
    runs = model.traced_runs
    assert len(runs) == 3 and all(len(r.execute_ms) == 20 for r in runs) and not model.flagged_runs
    stability = model.stability
    # both spreads computed from the three runs' executions, as base/stats.py defines them
    assert stability.within == pytest.approx(median([spread(r.execute_ms) for r in runs]))  # type: ignore[type-var]
    assert stability.between == pytest.approx(spread([median(r.execute_ms) for r in runs]))
    assert stability.worst_run in {r.label for r in runs}
    assert model.unstable == bool(stability.reasons)
    # the flag the job wrote is the one its runs give, and the terminal line says UNSTABLE exactly when it is set
    written = json.loads((tmp_path / "out" / "manifest.json").read_text())["devices"]["quiet"]["models"]["tiny_cnn"]
    summary = written["summary"]
    assert summary["unstable"] == model.unstable, summary
    assert summary["within_run_spread"] == pytest.approx(stability.within)
    assert summary["between_run_spread"] == pytest.approx(stability.between)
    (line,) = wall_clock_lines(job)
    assert ("UNSTABLE" in line) == model.unstable, line


def test_persistent_shell_is_one_session_and_recovers_from_a_deadline(ssh_server_factory: Callable[[], object],
                                                                      tmp_path: Path) -> None:
    host = ssh_server_factory()
    agent = create_agent(host.spec("shell", tmp_path / "workdir"))  # type: ignore[attr-defined]
    before = len(host.sessions())  # type: ignore[attr-defined]
    with agent:  # connecting (mkdir of the workdir) already opens the shell
        binary = agent.exec_raw("printf 'a\\000\\377b'; echo err >&2", 10, persistent=True)
        assert binary.exit_code == 0 and binary.stdout == b"a\x00\xffb" and b"err" in binary.stderr
        assert agent.exec_raw("exit 3", 10, persistent=True).exit_code == 3  # `exit` inside cannot end the shell
        assert agent.exec_raw("cat; echo done", 10, persistent=True).stdout == b"done\n"  # stdin is not the shell's
        assert len(host.sessions()) - before == 1  # type: ignore[attr-defined]
        stuck = agent.exec_raw("sleep 30", 1, persistent=True)
        assert stuck.timed_out and stuck.exit_code is None
        again = agent.exec_raw("echo back", 10, persistent=True)  # a new shell after the deadline
        assert again.exit_code == 0 and again.stdout == b"back\n"
        assert len(host.sessions()) - before == 2  # type: ignore[attr-defined]


def test_persistent_shell_returns_each_command_s_whole_stderr(ssh_server_factory: Callable[[], object],
                                                               tmp_path: Path) -> None:
    """sshd forwards a command's stdout and stderr from two pipes in no set order: a command's last stderr
    line must still be in its own result (the step's one-line reason for exit 125 is there), never lost or
    found in the next command's."""
    host = ssh_server_factory()
    with create_agent(host.spec("shell", tmp_path / "workdir")) as agent:  # type: ignore[attr-defined]
        for i in range(100):
            result = agent.exec_raw(f"echo out{i}; echo err{i} >&2; exit 125", 10, persistent=True)
            assert (result.exit_code, result.stdout, result.stderr) == (125, f"out{i}\n".encode(), f"err{i}\n".encode())


def test_adb_job_streams_artifacts_and_records_controls(adb_device: DeviceSpec, tmp_path: Path) -> None:
    options = JobOptions(runs=2, iterations=3, warmup=1, untraced_runs=1)
    result = run_job([adb_device], [parse_model_spec(CNN)], backend="xnnpack", options=options, out=tmp_path / "adb",
                     progress=Progress(quiet=True))
    assert result.exit_code == 0, result.job.devices[0].error
    device = load_manifest(tmp_path / "adb").device("adbdev")
    assert device is not None and device.controls == {"fixed_performance_mode": "unavailable"}  # no Android `cmd` here
    model = device.model("tiny_cnn")
    assert model is not None and model.verification is not None and model.verification.status == "pass"
    assert [r.cold for r in model.runs] == [True, False, False]
    assert all(r.peak_rss_kb and r.planned_memory_bytes for r in model.runs)
    assert all(r.contention is not None and len(r.contention.wait_ms) == 3 for r in model.runs)  # measured over adb
    first, second = (run.device_state.facts for run in model.runs[:2])
    assert first is not None and first.abi and second is not None and second.abi is None


def test_order_flag_is_wired(tmp_path: Path) -> None:
    def progress_order(order: str) -> list[str]:
        out = tmp_path / order
        result = subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", "run", "--model", MLP, "--model", CNN, "--runs", "2",
             "--iterations", "1", "--warmup", "0", "--untraced-runs", "0", "--order", order, "--out", str(out)],
            capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        assert load_manifest(out).config.options.order.value == order
        return [line.split("] ", 2)[-1].split(" (")[0] for line in result.stderr.splitlines() if ": run " in line]

    assert progress_order("sequential") == ["tiny_mlp: run 1/2", "tiny_mlp: run 2/2", "tiny_cnn: run 1/2", "tiny_cnn: run 2/2"]
    interleaved = progress_order("interleaved")
    assert sorted(interleaved[:2]) == ["tiny_cnn: run 1/2", "tiny_mlp: run 1/2"]  # one round: both models' run 1
