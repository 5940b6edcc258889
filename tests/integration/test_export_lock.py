"""Two etfarm processes that miss the same export make it once (base/cache.making): the second waits for the
first, says so, then finds the export cached. Real exports through ExecuTorch; the first process is frozen
(SIGSTOP) while it holds the export, so the second is sure to arrive while it is being made, whatever the
host's speed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.waiting import eventually

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
MLP = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"
WAITING = "waiting for another etfarm process exporting tiny_mlp (xnnpack)"


def _export(cache: Path, err: Path) -> subprocess.Popen[str]:
    """`etfarm export --json` of tiny_mlp into `cache`, its progress lines going to the file `err` as they come."""
    with err.open("w") as sink:
        return subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "export", MLP, "--json"], text=True,
                                stdout=subprocess.PIPE, stderr=sink, env={**os.environ, "ETFARM_CACHE_DIR": str(cache)})


def test_a_second_process_waits_for_the_export_the_first_is_making(tmp_path: Path) -> None:
    cache, err_first, err_second = tmp_path / "cache", tmp_path / "first.err", tmp_path / "second.err"
    first = _export(cache, err_first)
    second = None
    try:  # the first holds the export from before it says "exporting" until it has published it
        assert eventually(lambda: "exporting tiny_mlp" in err_first.read_text(), timeout_s=300), err_first.read_text()
        os.kill(first.pid, signal.SIGSTOP)
        second = _export(cache, err_second)
        assert eventually(lambda: WAITING in err_second.read_text(), timeout_s=300), err_second.read_text()
    finally:
        os.kill(first.pid, signal.SIGCONT)
    out_first, _ = first.communicate(timeout=600)
    out_second, _ = second.communicate(timeout=600)
    said_first, said_second = err_first.read_text(), err_second.read_text()
    assert first.returncode == 0 and second.returncode == 0, said_first + said_second
    assert "exported tiny_mlp (xnnpack)" in said_first
    assert "export cached: tiny_mlp (xnnpack)" in said_second and "exported tiny_mlp" not in said_second
    assert json.loads(out_first)["pte"] == json.loads(out_second)["pte"]  # one entry, made once
    assert [p.name for p in (cache / "exports").iterdir() if p.is_dir()] == [Path(json.loads(out_first)["pte"]).parent.name]
