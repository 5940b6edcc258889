"""The run loop against real peers: device sessions per process run, memory, interference flags.

- A real sshd (LogLevel VERBOSE) counts the sessions a whole job opens: at most one per
  process run, at most four fixed per job (connect, stage hash, SFTP, stage finalize).
- A real busy loop on the runner's pinned core, started mid-job, gets the later runs flagged.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from device_agents import DeviceSpec
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.progress import Progress
from orchestrator.run.calibration import SLOWDOWN_THRESHOLD
from orchestrator.run.job import run_job
from orchestrator.run.results import RunFlag, RunOptions, load_manifest

REPO = Path(__file__).resolve().parents[2]
MLP = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"
CNN = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"
FIXED_SESSIONS_MAX = 4

pytestmark = pytest.mark.slow


def test_one_session_per_process_run(ssh_server_factory: Callable[[], object], tmp_path: Path) -> None:
    host = ssh_server_factory()
    spec = host.spec("counted", tmp_path / "workdir")  # type: ignore[attr-defined]
    options = RunOptions(runs=3, iterations=3, warmup=1, untraced_runs=1)
    specs = [parse_model_spec(MLP), parse_model_spec(CNN)]
    before = len(host.sessions())  # type: ignore[attr-defined]
    result = run_job([spec], specs, backend="xnnpack", options=options, out=tmp_path / "fresh",
                     progress=Progress(quiet=True))
    assert result.exit_code == 0, result.job.devices[0].error
    sessions = host.sessions()[before:]  # type: ignore[attr-defined]
    process_runs = sum(len(m.runs) for _, m in result.job.results())
    assert process_runs == 2 * (3 + 1)
    assert len(sessions) <= process_runs + FIXED_SESSIONS_MAX, "\n".join(sessions)
    # Everything a process run needs came back over its one session: artifacts, facts, memory.
    for _, model in result.job.results():
        for run in model.runs:
            assert run.device_state["facts"]["cores"] >= 1
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
    assert len(host.sessions()) - before <= process_runs + 2  # type: ignore[attr-defined]


def _busy_loop_on(cpu: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["taskset", "-c", cpu, sys.executable, "-c", "while True: pass"],
                            stdin=subprocess.DEVNULL, start_new_session=True)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs a second core for the job itself")
def test_busy_loop_on_the_pinned_core_is_flagged(tmp_path: Path) -> None:
    cpu = "0"
    spec = DeviceSpec("pinned", "local", "host", str(tmp_path / "workdir"), settings={"cpus": cpu, "threads": 1})
    busy: list[subprocess.Popen[bytes]] = []

    class StartBusyLoop(Progress):
        """Starts a busy loop on the pinned core as soon as the job's first run is done."""

        def __call__(self, message: str, device: str | None = None) -> None:
            if "run 2/" in message and not busy:
                busy.append(_busy_loop_on(cpu))
                time.sleep(0.5)  # let the scheduler see it

    options = RunOptions(runs=3, iterations=20, warmup=2, untraced_runs=0, cpu_threads=1)
    try:
        result = run_job([spec], [parse_model_spec(MLP)], backend="xnnpack", options=options, out=tmp_path / "out",
                         progress=StartBusyLoop(quiet=True))
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    assert busy, "the job never reached run 2"
    assert result.exit_code == 0, result.job.devices[0].error
    runs = load_manifest(tmp_path / "out").device("pinned").model("tiny_mlp").runs  # type: ignore[union-attr]
    first, *later = runs
    assert first.slowdown is not None
    for run in later:
        assert run.flag is RunFlag.INTERFERED, (run.label, run.slowdown, run.calibration_before_ms, run.calibration_after_ms)
        assert run.slowdown is not None and run.slowdown > max(SLOWDOWN_THRESHOLD, first.slowdown)
