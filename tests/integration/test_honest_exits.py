"""Issue 21 (1): etfarm's exit code and stdout say what happened, whatever a signal or a model's own code does.

Real processes: a real `etfarm` gets a real SIGTERM or SIGINT while a model exports; model factories
that call `sys.exit()` or print (Python's prints and raw writes to fd 1); a real nightly interrupted
mid-job, then the next night, whose `last-good` must not be the interrupted one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "configs" / "models" / "tiny_mlp.py"
FAST = ("--backend", "portable", "--runs", "1", "--iterations", "3", "--warmup", "1", "--untraced-runs", "0")


def etfarm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=600, env=env)


def start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    # SIGINT must reach the child even when pytest runs as a background job (tests/conftest.py)
    return subprocess.Popen([sys.executable, "-m", "orchestrator.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for(path: Path, job: subprocess.Popen[str], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if job.poll() is not None:
            raise AssertionError(f"etfarm ended before {path} appeared: {job.communicate()[1][-3000:]}")
        if time.monotonic() > deadline:
            job.kill()
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.05)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("[")]


@pytest.mark.parametrize("code", [0, 3])
def test_a_factory_that_exits_is_a_usage_error_naming_the_spec(tmp_path: Path, code: int) -> None:
    model = tmp_path / f"exits{code}.py"
    model.write_text(f"import sys\n\ndef build():\n    sys.exit({code})\n")
    result = etfarm("run", "--model", f"{model}:build", *FAST, "--no-store", "--out", str(tmp_path / "run"))
    assert result.returncode == 2, result.stderr
    assert error_lines(result.stderr) == [f"error: model spec '{model}:build': its code called sys.exit({code}); "
                                          "a factory returns (module, example_inputs) or raises"], result.stderr
    assert result.stdout == "" and not (tmp_path / "run").exists()


@pytest.mark.slow
def test_what_a_model_prints_goes_to_stderr_and_json_stays_json(tmp_path: Path) -> None:
    model = tmp_path / "chatty.py"
    model.write_text(f"import os, sys\nsys.path.insert(0, {str(TINY.parent)!r})\nprint('IMPORT-PRINT')\n"
                     "import torch, tiny_mlp\n\n"
                     "class Loud(torch.nn.Module):\n    def __init__(self, inner):\n        super().__init__()\n"
                     "        self.inner = inner\n\n    def forward(self, x):\n        print('FORWARD-PRINT')\n"
                     "        return self.inner(x)\n\n"
                     "def build():\n    print('FACTORY-PRINT')\n    os.write(1, b'FD1-WRITE\\n')\n"
                     "    module, inputs = tiny_mlp.build()\n    return Loud(module), inputs\n")
    result = etfarm("run", "--model", f"{model}:build", *FAST, "--no-store", "--no-report", "--json",
                    "--out", str(tmp_path / "run"))
    assert result.returncode == 0, result.stderr[-3000:]
    view = json.loads(result.stdout)  # stdout is one JSON document, nothing else
    assert view["status"] == "ok"
    for printed in ("IMPORT-PRINT", "FACTORY-PRINT", "FD1-WRITE", "FORWARD-PRINT"):
        assert printed in result.stderr and printed not in result.stdout


@pytest.mark.parametrize("sig, said", [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C")], ids=["sigterm", "sigint"])
def test_a_signal_during_export_is_one_line_and_exit_130(tmp_path: Path, sig: int, said: str) -> None:
    marker = tmp_path / "exporting"
    model = tmp_path / "slow.py"
    model.write_text(f"import pathlib, time\n\ndef build():\n    pathlib.Path({str(marker)!r}).touch()\n"
                     "    time.sleep(120)\n")
    job = start("run", "--model", f"{model}:build", *FAST, "--no-store", "--out", str(tmp_path / "run"))
    try:
        wait_for(marker, job)
        job.send_signal(sig)
        stdout, stderr = job.communicate(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 130, stderr
    assert error_lines(stderr) == [f"interrupted ({said}): what finished is kept"], stderr
    assert "Traceback" not in stderr and stdout == ""


@pytest.mark.slow
def test_an_interrupted_nightly_exits_130_judges_nothing_and_is_never_a_baseline(tmp_path: Path) -> None:
    slow = tmp_path / "slow.sh"  # each process run starts a second late: time to interrupt the job mid-way
    slow.write_text('#!/bin/sh\nsleep 1\nexec "$@"\n')
    slow.chmod(0o755)
    inventory, quick = tmp_path / "slow.yaml", tmp_path / "quick.yaml"
    inventory.write_text(f"devices:\n  board:\n    transport: local\n    workdir: {tmp_path / 'w1'}\n"
                         f"    exec_prefix: [{str(slow)!r}]\n")
    quick.write_text(f"devices:\n  board:\n    transport: local\n    workdir: {tmp_path / 'w2'}\n")
    report, store = tmp_path / "reports", tmp_path / "results.db"

    def plan(name: str, config: Path, runs: int) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps({"devices": ["board"], "models": [f"{TINY}:build"], "runs": runs, "confirm_max_runs": 2 * runs, "iterations": 3,
                                    "warmup": 1, "backend": "portable", "report": str(report), "config": str(config)}))
        return path

    env = {**os.environ, "ETFARM_STORE": str(store)}
    night = start("nightly", "--plan", str(plan("slow.json", inventory, 8)), env=env)
    try:
        deadline = time.monotonic() + 120
        while not (found := list(report.glob("runs/*/board/tiny_mlp/run-2/etdump.etdp"))):
            assert night.poll() is None and time.monotonic() < deadline, "the night never reached its run 2"
            time.sleep(0.05)
        run_dir = found[0].parents[3]
        night.send_signal(signal.SIGINT)
        stdout, stderr = night.communicate(timeout=60)
    finally:
        if night.poll() is None:
            night.kill()
    assert night.returncode == 130, stderr[-3000:]
    assert "interrupted: no verdicts written" in stdout
    assert not (run_dir / "verdicts.json").exists()  # no verdict from partial data ...
    assert not list(report.glob("nightly-*")) and not (report / "latest.md").exists()  # ... and no report of one
    interrupted_id = json.loads((run_dir / "manifest.json").read_text())["run_id"]
    history = etfarm("history", env=env)
    assert interrupted_id in history.stdout and "interrupted" in history.stdout  # recorded, as what it is

    # The next night has no baseline yet: the interrupted night is not `last-good`.
    next_night = etfarm("nightly", "--plan", str(plan("quick.json", quick, 2)), "-q", env=env)
    assert next_night.returncode == 0, next_night.stdout + next_night.stderr[-3000:]
    verdicts = json.loads(max(report.glob("nightly-*.json")).read_text())
    (pair,) = verdicts["pairs"]
    assert pair["verdict"] == "new" and pair["source_a"] in (None, ""), pair
    assert interrupted_id not in json.dumps(verdicts)


@pytest.mark.slow
@pytest.mark.parametrize("signals", [(signal.SIGHUP,), (signal.SIGINT, signal.SIGINT)], ids=["sighup", "ctrl-c-twice"])
def test_a_hangup_or_a_second_ctrl_c_still_stops_cleanly(tmp_path: Path, signals: tuple[int, ...]) -> None:
    """SIGHUP (the terminal went away) stops a job as Ctrl-C does; a second Ctrl-C while it stops does not cut
    the stop short: the manifest still says `interrupted`, not `running`."""
    slow = tmp_path / "slow.sh"
    slow.write_text('#!/bin/sh\nsleep 1\nexec "$@"\n')
    slow.chmod(0o755)
    inventory = tmp_path / "devices.yaml"
    inventory.write_text(f"devices:\n  board:\n    transport: local\n    workdir: {tmp_path / 'w'}\n"
                         f"    exec_prefix: [{str(slow)!r}]\n")
    out = tmp_path / "run"
    job = start("run", "--config", str(inventory), "--devices", "board", "--model", f"{TINY}:build",
                "--backend", "portable", "--runs", "8", "--iterations", "3", "--warmup", "1", "--untraced-runs", "0",
                "--no-store", "--no-report", "--out", str(out))
    try:
        wait_for(out / "board" / "tiny_mlp" / "run-2" / "etdump.etdp", job)
        for sig in signals:
            job.send_signal(sig)
            time.sleep(0.3)
        stdout, stderr = job.communicate(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
    said = "SIGHUP" if signals[0] == signal.SIGHUP else "Ctrl-C"
    assert job.returncode == 130, stderr[-3000:]
    assert error_lines(stderr)[-1] == f"interrupted ({said}): what finished is kept", stderr
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    assert f"--resume {out}" in stdout
