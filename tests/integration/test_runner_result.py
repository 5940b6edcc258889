"""Issue 21 (2): a device's runner result is checked before it is kept, through a real `etfarm run`.

Each hostile device is the real runner behind an `exec_prefix` wrapper that rewrites what it
printed (a NaN or negative time, fewer executions, no result line at all). Each fails as a data
problem of that device, named in its error; the good device beside them is unaffected, and
nothing non-finite reaches the manifest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODEL = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"
# sed programs applied to the runner's stdout (its exit status is kept)
HOSTILE = {
    "nan": ("s/\"execute_ms\": \\[[0-9.]*/\"execute_ms\": [NaN/", "holds NaN, not a number"),
    "negative": ("s/\"execute_ms\": \\[[0-9.]*/\"execute_ms\": [-0.0756/", "execute_ms holds -0.0756"),
    "fewer": ("s/\"execute_ms\": \\[[0-9.]*, /\"execute_ms\": [/", "execute_ms holds 2 times for 3 executions"),
    "silent": ("/^ETFARM_RESULT/d", "printed no ETFARM_RESULT line"),
}


def wrapper(sed: str) -> str:
    return json.dumps(["sh", "-c", f'out=$("$@"); rc=$?; printf "%s\\n" "$out" | sed \'{sed}\'; exit $rc', "hostile"])


@pytest.mark.slow
def test_hostile_runner_results_fail_their_device_as_data(tmp_path: Path) -> None:
    config = tmp_path / "devices.yaml"
    lines = ["devices:", f"  good:\n    transport: local\n    workdir: {tmp_path / 'good'}"]
    lines += [f"  {name}:\n    transport: local\n    workdir: {tmp_path / name}\n    exec_prefix: {wrapper(sed)}"
              for name, (sed, _) in HOSTILE.items()]
    config.write_text("\n".join(lines) + "\n")
    out = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "orchestrator.cli", "run", "--config", str(config), "--devices",
                             ",".join(["good", *HOSTILE]), "--model", MODEL, "--backend", "portable", "--runs", "1",
                             "--iterations", "3", "--warmup", "1", "--untraced-runs", "0", "--out", str(out), "--json"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 1, result.stderr[-3000:]

    def refuse(token: str) -> None:
        raise AssertionError(f"manifest holds {token}")

    manifest = json.loads((out / "manifest.json").read_text(), parse_constant=refuse)
    devices = manifest["devices"]
    assert devices["good"]["status"] == "ok" and devices["good"]["error"] is None
    for name, (_, problem) in HOSTILE.items():
        device = devices[name]
        assert device["status"] == "failed" and device["blame"] == "data", (name, device)
        assert f"[{name}] runner (tiny_mlp, run-1): the runner's result does not hold" in device["error"], device
        assert problem in device["error"], device["error"]
    view = json.loads(result.stdout)
    assert {d["name"]: d["blame"] for d in view["devices"]} == {"good": None, **{n: "data" for n in HOSTILE}}
