"""Ctrl-C and SIGTERM on a real `etfarm run` (local + an SSH device mid-run), then `--resume` completes it.

The signal goes to a real subprocess started with the default SIGINT handler (its own session:
a background job of a shell would ignore SIGINT). The SSH device's sshd runs on this host, so
scanning /proc for runner processes that use this test's workdirs covers host and device alike.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from device_agents import DeviceSpec
from orchestrator.base.errors import EXIT_INTERRUPTED
from orchestrator.run import load_manifest
from orchestrator.store import open_store
from tests.helpers.held_run import held_run_2
from tests.helpers.inspector_stats import measured_samples
from tests.helpers.inventory import write_inventory
from tests.helpers.waiting import eventually

REPO = Path(__file__).resolve().parents[2]
MLP = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"
# Every run starts with a pause, so the signal lands while runners are running on both devices.
SLOW_START = ("sh", "-c", 'sleep 4; exec "$@"', "slow-start")
RUNS, ITERATIONS = 3, 3
STOP_WITHIN_S = 20  # Ctrl-C to exit: runners killed on the devices, statistics written


def etfarm(*args: str) -> list[str]:
    return [sys.executable, "-m", "orchestrator.cli", "run", *args]


def runner_pids(marker: str) -> list[int]:
    """Runner processes (and their slow-start wrappers) whose command line mentions `marker` (a workdir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and ("etfarm_runner" in cmdline or "slow-start" in cmdline):
            found.append(int(entry.name))
    return found


def wait_for(path: Path, timeout_s: float, job: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if job.poll() is not None:
            raise AssertionError(f"etfarm ended ({job.returncode}) before {path} appeared: {job.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout_s}s")
        time.sleep(0.1)


def event_keys(stats: pd.DataFrame, device: str) -> set[tuple[str, int, str]]:
    rows = stats[stats["device"] == device]
    return {(str(r.event_block), int(r.event_index), str(r.event_name)) for r in rows.itertuples()}


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_signal_stops_everything_then_resume_completes(ssh_server_factory, tmp_path: Path, sig: int) -> None:
    host = ssh_server_factory()
    ssh = host.spec("board", tmp_path / "board-workdir", exec_prefix=SLOW_START)
    local = DeviceSpec("local", "host", str(tmp_path / "local-workdir"), exec_prefix=SLOW_START)
    config = write_inventory(tmp_path / "devices.yaml", [ssh, local])
    out = tmp_path / "run"
    store = tmp_path / "results.db"
    common = ("--config", str(config), "--store", str(store), "--no-report")
    job = subprocess.Popen(
        etfarm(*common, "--devices", "board,local", "--model", MLP, "--backend", "portable", "--runs", str(RUNS),
               "--iterations", str(ITERATIONS), "--untraced-runs", "1", "--out", str(out)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        wait_for(out / "board" / "tiny_mlp" / "run-1" / "etdump.etdp", 300, job)
        wait_for(out / "local" / "tiny_mlp" / "run-2", 60, job)  # mid-way: local's run 2 has started
        # The signal must land while a runner runs: every run starts with a 4 s pause, so one is found at once
        # unless the host stalls between two runs; then wait for the next.
        assert eventually(lambda: bool(runner_pids(str(tmp_path))), 30, 0.1), \
            "no runner was running when the signal was sent"
        os.kill(job.pid, sig)
        signalled = time.monotonic()
        stdout, stderr = job.communicate(timeout=STOP_WITHIN_S + 30)
        stopped_s = time.monotonic() - signalled
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == EXIT_INTERRUPTED, stderr[-3000:]
    assert stopped_s < STOP_WITHIN_S, stopped_s
    assert runner_pids(str(tmp_path)) == [], "a runner outlived the interrupted job"

    interrupted = load_manifest(out)
    assert interrupted.status == "interrupted"
    done = {(d.name, m.name): [r.label for r in m.runs] for d, m in interrupted.results()}
    assert "run-1" in done[("board", "tiny_mlp")] and "run-1" in done[("local", "tiny_mlp")], done
    assert all(m.status in ("ok", "partial") for _, m in interrupted.results())
    stats = pd.read_csv(out / "stats.csv")
    assert set(stats["device"]) == {"board", "local"}  # what finished is analysed
    assert f"--resume {out}" in stdout

    # Resuming with a conflicting option is refused before anything runs.
    refused = subprocess.run(etfarm(*common, "--resume", str(out), "--runs", "7"), capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 2 and "--runs 7 differs from the recorded 3" in refused.stderr, refused.stderr

    resumed = subprocess.run(etfarm(*common, "--resume", str(out)), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    final = load_manifest(out)
    assert final.status == "ok" and final.run_id == interrupted.run_id
    labels = [f"run-{k}" for k in range(1, RUNS + 1)] + ["e2e-1"]
    for device, model in final.results():
        assert device.status == "ok" and model.status == "ok"
        assert sorted(r.label for r in model.runs) == sorted(labels), (device.name, [r.label for r in model.runs])
        # the runs kept from before the signal are the same runs, not repeated
        for run in model.runs:
            if run.label in done[(device.name, model.name)]:
                before = next(r for d, m in interrupted.results() if d.name == device.name for r in m.runs
                              if r.label == run.label)
                assert run.execute_ms == before.execute_ms
    # Statistics have the shape of an uninterrupted run's: same events, every sample.
    reference_out = tmp_path / "reference"
    reference = subprocess.run(
        etfarm(*common, "--devices", "local", "--model", MLP, "--backend", "portable", "--runs", str(RUNS),
               "--iterations", str(ITERATIONS), "--untraced-runs", "1", "--out", str(reference_out)),
        capture_output=True, text=True, timeout=600)
    assert reference.returncode == 0, reference.stderr[-3000:]
    expected = pd.read_csv(reference_out / "stats.csv")
    stats = pd.read_csv(out / "stats.csv")
    for device in ("board", "local"):
        assert event_keys(stats, device) == event_keys(expected, "local")
        samples = measured_samples(stats[(stats["device"] == device) & (stats["event_name"] == "Method::execute")])
        assert int(samples.iloc[0]) == RUNS * ITERATIONS

    # The store holds the run once, as complete as if nothing had failed (record() replaces by run id).
    with open_store(store) as opened:
        stored = [r for r in opened.jobs() if r.run_id == final.run_id]
    assert len(stored) == 1 and stored[0].status == "ok", stored

    again = subprocess.run(etfarm(*common, "--resume", str(out)), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "nothing to resume" in again.stderr, again.stderr[-2000:]
    assert load_manifest(out).finished == final.finished  # untouched


@pytest.mark.slow
def test_sigint_kills_the_runner_on_an_adb_device(adb_testdevice, tmp_path: Path) -> None:
    """Closing an adb shell does not stop what it started either: the runner is killed on the device."""
    # Run 2 is held on the device until the test releases it: the signal lands while it runs, however slow the
    # host, and a runner left alive would stay (not end on its own) until the test looks.
    release = Path(adb_testdevice.spec("phone").workdir) / "release-run-2"
    phone = adb_testdevice.spec("phone", exec_prefix=held_run_2(release))
    config = write_inventory(tmp_path / "devices.yaml", [phone])
    out = tmp_path / "run"
    marker = str(Path(phone.workdir))
    job = subprocess.Popen(
        etfarm("--config", str(config), "--no-store", "--no-report", "--devices", "phone", "--model", MLP,
               "--backend", "portable", "--runs", str(RUNS), "--iterations", str(ITERATIONS), "--out", str(out)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        wait_for(Path(phone.workdir) / "out" / "tiny_mlp" / "run-2.pid", 300, job)
        assert eventually(lambda: bool(runner_pids(marker)), 30, 0.1), \
            "no runner was running on the device when the signal was sent"
        os.kill(job.pid, signal.SIGINT)
        signalled = time.monotonic()
        _, stderr = job.communicate(timeout=STOP_WITHIN_S + 30)
        stopped_s = time.monotonic() - signalled
        assert job.returncode == EXIT_INTERRUPTED, stderr[-3000:]
        assert stopped_s < STOP_WITHIN_S, stopped_s
        # the device daemon reaps its shell; the held runner never ends by itself
        assert eventually(lambda: runner_pids(marker) == [], 30, 0.1), \
            "the runner outlived the interrupted job on the device"
    finally:
        release.touch()
        if job.poll() is None:
            job.kill()
    manifest = load_manifest(out)
    assert manifest.status == "interrupted"
    assert [r.label for r in manifest.device("phone").model("tiny_mlp").runs] == ["run-1"]  # type: ignore[union-attr]


@pytest.mark.slow
def test_resume_after_sigkill_keeps_the_runs_recorded_before_it(tmp_path: Path) -> None:
    """No handler runs on SIGKILL (or a power cut): the manifest, updated after every process run, is enough."""
    # Run 2 is held until the kill: it cannot finish first however slow the host (a 4 s pause could be outrun).
    release = tmp_path / "release-run-2"
    local = DeviceSpec("local", "host", str(tmp_path / "local-workdir"), exec_prefix=held_run_2(release))
    config = write_inventory(tmp_path / "devices.yaml", [local])
    out = tmp_path / "run"
    common = ("--config", str(config), "--no-store", "--no-report")
    job = subprocess.Popen(
        etfarm(*common, "--model", MLP, "--backend", "portable", "--runs", str(RUNS), "--iterations", str(ITERATIONS),
               "--untraced-runs", "0", "--order", "sequential", "--out", str(out)),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        wait_for(tmp_path / "local-workdir" / "out" / "tiny_mlp" / "run-2.pid", 300, job)
        os.killpg(job.pid, signal.SIGKILL)  # etfarm: nothing gets to clean up
        job.wait(30)
        for pid in runner_pids(str(tmp_path)):  # and the held runner (a session of its own): the power is cut
            os.kill(pid, signal.SIGKILL)
    finally:
        release.touch()
        if job.poll() is None:
            job.kill()
    killed = load_manifest(out)
    assert killed.status == "running"
    assert [r.label for r in killed.device("local").model("tiny_mlp").runs] == ["run-1"]  # type: ignore[union-attr]
    resumed = subprocess.run(etfarm(*common, "--resume", str(out)), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    model = load_manifest(out).device("local").model("tiny_mlp")  # type: ignore[union-attr]
    assert model is not None and model.status == "ok"
    assert [r.label for r in model.runs] == [f"run-{k}" for k in range(1, RUNS + 1)]
    assert model.runs[0].execute_ms == killed.device("local").model("tiny_mlp").runs[0].execute_ms  # type: ignore[union-attr]
    # the resumed job wrote the samples of every run, those from before the kill too (results/samples.py)
    from orchestrator.results.samples import pair_samples

    recorded = pair_samples(out / "samples.npz", "local", "tiny_mlp")
    assert recorded is not None and recorded.samples.run_labels == tuple(f"run-{k}" for k in range(1, RUNS + 1))

    # Killed after its last run was recorded (the manifest still says running): resuming only closes the job.
    from dataclasses import replace

    from orchestrator.base.cache import write_json_atomic
    from orchestrator.run import JobStatus

    write_json_atomic(out / "manifest.json", replace(load_manifest(out), status=JobStatus.RUNNING).to_dict())
    closed = subprocess.run(etfarm(*common, "--resume", str(out)), capture_output=True, text=True, timeout=300)
    assert closed.returncode == 0 and "nothing to resume" in closed.stderr, closed.stderr[-2000:]
    assert load_manifest(out).status == "ok"
