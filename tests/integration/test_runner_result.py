"""Issue 21 (2): what a device's runner sends back is checked before it is kept, through a real `etfarm run`.

Each hostile device is the real runner behind an `exec_prefix` wrapper (a shell script) that rewrites
what it printed (a NaN, infinite, negative or 1e308 time, fewer executions, wrong-typed fields, a
truncated result line, none at all, one buried past the stdout cap) or leaves files the stream
cannot frame (a newline or a backslash in a name). Each fails as a data problem of that device,
named in its error, tried once (never retried as infrastructure); the good device beside them is
unaffected; nothing non-finite reaches the manifest, the store or `report --format json`; and a
child the runner left running in the background does not outlive the job.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODEL = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"
RESULT = "the runner's result does not hold"
NAMES = "left 1 file(s) whose names are not plain printable text"
# The wrapper: `hostile.sh MODE RUNNER ARGS...` runs the real runner, then misbehaves per MODE (its exit
# status is kept). $out is the process run's output directory on the device.
WRAPPER = r"""#!/bin/sh
mode=$1; shift
out=; for a in "$@"; do case $a in --etdump_path=*) out=$(dirname "${a#--etdump_path=}");; esac; done
res=$("$@"); rc=$?
first() { printf '%s\n' "$res" | sed "s/\"execute_ms\": \[[0-9.]*/\"execute_ms\": [$1/"; }
case $mode in
  nan) first NaN ;;
  infinite) first Infinity ;;
  overflow) first 1e999 ;;
  huge) first 1e308 ;;
  negative) first -0.0756 ;;
  fewer) printf '%s\n' "$res" | sed 's/"execute_ms": \[[0-9.]*, /"execute_ms": [/' ;;
  typed-count) printf '%s\n' "$res" | sed 's/"executions": 3/"executions": "3"/' ;;
  typed-flag) printf '%s\n' "$res" | sed 's/"etdump": true/"etdump": "yes"/' ;;
  silent) printf '%s\n' "$res" | sed '/^ETFARM_RESULT/d' ;;
  truncated) printf '%s' "$res" | head -c -40 ;;
  buried) head -c 2000000 /dev/zero | tr '\0' x; printf '\n%s\n' "$res"; head -c 4500000 /dev/zero | tr '\0' y ;;
  newline-name) printf '%s\n' "$res"; echo x > "$out/evil
name" ;;
  backslash-name) printf '%s\n' "$res"; echo x > "$out/evil\\name" ;;
  child) printf '%s\n' "$res"; sleep 300 >/dev/null 2>&1 & echo $! > "$CHILD_PID" ;;
  *) printf '%s\n' "$res" ;;
esac
exit $rc
"""
# mode -> what its device's error must say
HOSTILE = {
    "nan": "holds NaN, not a number",
    "infinite": "holds Infinity, not a number",
    "overflow": "holds 1e999, not a number",
    "huge": "execute_ms holds 1e+308",
    "negative": "execute_ms holds -0.0756",
    "fewer": "execute_ms holds 2 times for 3 executions",
    "typed-count": 'executions is "3", not int',
    "typed-flag": 'etdump is "yes", not bool',
    "silent": "printed no ETFARM_RESULT line",
    "truncated": "its result line is not JSON (truncated?)",
    "buried": "printed no ETFARM_RESULT line (cut off, or past the output cap?)",
    "newline-name": NAMES,
    "backslash-name": NAMES,
}


def refuse(token: str) -> None:
    raise AssertionError(f"bare {token} in JSON")


@pytest.mark.slow
def test_hostile_runner_results_fail_their_device_as_data(tmp_path: Path) -> None:
    wrapper = tmp_path / "hostile.sh"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    config = tmp_path / "devices.yaml"
    lines = ["devices:", f"  good:\n    transport: local\n    workdir: {tmp_path / 'good'}"]
    lines += [f"  {name}:\n    transport: local\n    workdir: {tmp_path / name}\n    exec_prefix: {json.dumps([str(wrapper), name])}"
              for name in [*HOSTILE, "child"]]
    config.write_text("\n".join(lines) + "\n")
    out, store, child_pid = tmp_path / "run", tmp_path / "results.db", tmp_path / "child.pid"
    result = subprocess.run([sys.executable, "-m", "orchestrator.cli", "run", "--config", str(config), "--devices",
                             ",".join(["good", "child", *HOSTILE]), "--model", MODEL, "--backend", "portable",
                             "--runs", "1", "--iterations", "3", "--warmup", "1", "--untraced-runs", "0",
                             "--out", str(out), "--store", str(store), "--json"],
                            capture_output=True, text=True, timeout=900, env={**os.environ, "CHILD_PID": str(child_pid)})
    assert result.returncode == 1, result.stderr[-3000:]
    assert "retrying" not in result.stderr and "Traceback" not in result.stderr, result.stderr[-3000:]

    manifest = json.loads((out / "manifest.json").read_text(), parse_constant=refuse)
    devices = manifest["devices"]
    for name in ("good", "child"):
        assert devices[name]["status"] == "ok" and devices[name]["error"] is None, devices[name]
    for name, problem in HOSTILE.items():
        device = devices[name]
        assert device["status"] == "failed" and device["blame"] == "data", (name, device)
        assert f"[{name}] runner (tiny_mlp, run-1): " in device["error"] and problem in device["error"], device["error"]
        assert RESULT in device["error"] or problem == NAMES
        assert device["attempts"] == [], (name, device["attempts"])  # tried once: a device's data is not a link fault
    view = json.loads(result.stdout, parse_constant=refuse)
    assert {d["name"]: d["blame"] for d in view["devices"]} == {"good": None, "child": None, **dict.fromkeys(HOSTILE, "data")}

    # Nothing non-finite in the store's JSON columns, nor in the JSON report.
    with sqlite3.connect(store) as conn:
        texts = [t for row in conn.execute("SELECT facts_json, controls_json FROM devices") for t in row]
        texts += [t for row in conn.execute("SELECT run_json FROM process_runs") for t in row]  # the run, whole
        texts += [t for row in conn.execute("SELECT result_json FROM results") for t in row]
    for text in texts:
        json.loads(text, parse_constant=refuse)
    report = subprocess.run([sys.executable, "-m", "orchestrator.cli", "report", str(out), "--format", "json",
                             "--output", str(tmp_path / "report.json")], capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    json.loads((tmp_path / "report.json").read_text(), parse_constant=refuse)

    # The child the runner left in the background ended with its process run.
    pid = int(child_pid.read_text())
    deadline = time.monotonic() + 5
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _running(pid):
        os.kill(pid, 9)
        raise AssertionError("the runner's background child outlived the job")


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
