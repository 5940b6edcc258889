"""Faults of the job itself, with the real runner: a run that fails keeps the runs before it (partial),
wrong outputs are not success, a host disk that fills mid-run fails the device with one clear line and
the job still records how it ended."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from device_agents import DeviceSpec
from orchestrator.artifacts.tensorfile import read_tensors, write_tensors
from orchestrator.run import load_manifest
from tests.helpers.inspector_stats import measured_samples
from tests.helpers.inventory import write_inventory
from tests.helpers.tools import missing

REPO = Path(__file__).resolve().parents[2]
MLP = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"


def etfarm(*args: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=timeout_s)


def local_with_prefix(tmp_path: Path, prefix: tuple[str, ...]) -> Path:
    spec = DeviceSpec("local", "host", str(tmp_path / "local-workdir"), exec_prefix=prefix)
    return write_inventory(tmp_path / "devices.yaml", [spec])


def test_run_k_fails_keeps_runs_before_it_as_partial_and_resume_completes_it(tmp_path: Path) -> None:
    # The runner's third start fails (a real process exiting 7): runs 1 and 2 are kept and analysed.
    counter = tmp_path / "starts"
    third_fails = ("sh", "-c", 'n=$(cat "$0" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$0"; '
                   '[ "$n" -eq 3 ] && { echo dying >&2; exit 7; }; exec "$@"', str(counter))
    config = local_with_prefix(tmp_path, third_fails)
    out = tmp_path / "run"
    job = etfarm("run", "--config", str(config), "--model", MLP, "--backend", "portable", "--runs", "4",
                 "--iterations", "3", "--untraced-runs", "0", "--order", "sequential", "--out", str(out),
                 "--no-store", "--no-report")
    assert job.returncode == 1, job.stderr[-3000:]
    assert "Traceback" not in job.stderr
    device = load_manifest(out).device("local")
    assert device is not None and device.status == "failed", device
    assert "runner (tiny_mlp, run-3)" in (device.error or "") and "exited 7" in (device.error or ""), device.error
    model = device.model("tiny_mlp")
    assert model is not None and model.status == "partial"
    assert [r.label for r in model.runs] == ["run-1", "run-2"]
    assert model.error and model.verification is not None and model.verification.status == "pass"
    assert execute_samples(out) == 2 * 3
    assert "partial: 2 run(s) kept" in job.stdout

    # A resume whose device fails before running anything still keeps (and analyses) what was there.
    broken = tmp_path / "not-a-dir"
    broken.write_text("")
    bad = write_inventory(tmp_path / "broken.yaml", [DeviceSpec("local", "host", str(broken))])
    failed = etfarm("run", "--resume", str(out), "--config", str(bad), "--no-store", "--no-report")
    assert failed.returncode == 1, failed.stderr[-3000:]
    again = load_manifest(out).device("local").model("tiny_mlp")  # type: ignore[union-attr]
    assert again is not None and [r.label for r in again.runs] == ["run-1", "run-2"] and again.status == "partial"
    assert execute_samples(out) == 2 * 3

    # Resumed on the working device, the model gets runs 3 and 4 and is complete.
    done = etfarm("run", "--resume", str(out), "--config", str(config), "--no-store", "--no-report")
    assert done.returncode == 0, done.stderr[-3000:]
    final = load_manifest(out).device("local").model("tiny_mlp")  # type: ignore[union-attr]
    assert final is not None and final.status == "ok"
    assert [r.label for r in final.runs] == ["run-1", "run-2", "run-3", "run-4"]
    assert [r.execute_ms for r in final.runs[:2]] == [r.execute_ms for r in model.runs]  # kept, not re-run
    assert execute_samples(out) == 4 * 3


def execute_samples(out: Path) -> int:
    stats = pd.read_csv(out / "stats.csv")
    return int(measured_samples(stats[stats["event_name"] == "Method::execute"]).iloc[0])


def test_wrong_outputs_mark_the_device_wrong_results(tmp_path: Path) -> None:
    exported = tmp_path / "exported"
    made = etfarm("export", MLP, "--backend", "portable", "--out", str(exported))
    assert made.returncode == 0, made.stderr[-2000:]
    reference = exported / "reference_outputs.etft"
    write_tensors(reference, [t + 0.5 for t in read_tensors(reference)])  # the reference no longer holds
    out = tmp_path / "run"
    job = etfarm("run", "--model", str(exported / "model.pte"), "--runs", "2", "--iterations", "2",
                 "--untraced-runs", "0", "--out", str(out), "--no-store", "--no-report")
    assert job.returncode == 1, job.stderr[-3000:]
    device = load_manifest(out).device("local")
    assert device is not None and device.status == "wrong-results"
    assert "differs from the reference" in (device.error or "")
    assert (out / "stats.csv").is_file()  # the timings are kept
    assert "local: WRONG-RESULTS" in job.stdout


@pytest.mark.slow
def test_host_disk_full_mid_run_fails_the_device_with_one_line(tmp_path: Path) -> None:
    if shutil.which("mount") is None or os.geteuid() != 0:
        missing("mounting a tmpfs needs root and mount (CI runs as root)")
    out = tmp_path / "small"
    out.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(out)], check=True)
    try:
        # Every traced run leaves 300 kB beside its ETDump: the third fills the 1 MB disk, and then another
        # writer on the host ($0, bounded) takes what is left, so the disk stays full to the job's end.
        pad = ("sh", "-c", 'for a; do case $a in --etdump_path=*) d=${a#--etdump_path=}; d=${d%/*};; esac; done; '
               '"$@"; rc=$?; [ -n "$d" ] && head -c 300000 /dev/zero > "$d/pad.bin"; '
               'case $d in */run-3) head -c 2000000 /dev/zero > "$0" 2>/dev/null;; esac; exit $rc', str(out / "filler"))
        config = local_with_prefix(tmp_path, pad)
        job = etfarm("run", "--config", str(config), "--model", MLP, "--backend", "portable", "--runs", "6",
                     "--iterations", "2", "--untraced-runs", "0", "--out", str(out / "run"), "--no-store")
        assert job.returncode == 1, job.stderr[-3000:]
        assert "Traceback" not in job.stderr and "KeyError" not in job.stderr
        assert "Logging error" not in job.stderr and "internal error" not in job.stderr, job.stderr[-3000:]
        assert f"host disk full: {out / 'run'}" in job.stdout + job.stderr, job.stdout[-2000:]
        assert (out / "run" / "local" / "tiny_mlp" / "run-1" / "etdump.etdp").is_file()  # kept
        # The job's end is recorded although the disk is full (it used to stay `running`), and nothing calls
        # the results complete (the report's warning did).
        manifest = load_manifest(out / "run")
        assert manifest.status == "failed", manifest.status
        device = manifest.device("local")
        assert device is not None and device.status == "failed" and "host disk full" in (device.error or "")
        model = device.model("tiny_mlp")
        assert model is not None and model.status == "partial"
        assert "partial" in job.stdout and "complete" not in job.stdout + job.stderr, job.stdout[-2000:] + job.stderr
        assert not (out / "run" / ".etfarm-reserve").exists()
    finally:
        subprocess.run(["umount", "-l", str(out)], check=False)
