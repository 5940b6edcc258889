"""procs: commands run in their own process group; kill_running ends them all (Ctrl-C of a run)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from orchestrator.base import procs


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text() if Path(f"/proc/{pid}/stat").exists() else ""
    return bool(stat) and stat.split(")")[-1].split()[0] != "Z"


def test_kill_running_ends_every_command_and_its_children(tmp_path: Path) -> None:
    pidfile = tmp_path / "child"
    results: list[procs.CommandResult] = []
    argv = ["sh", "-c", f'sleep 60 & echo $! > {pidfile}; wait']
    worker = threading.Thread(target=lambda: results.append(procs.run(argv, timeout_s=120)))
    worker.start()
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    child = int(pidfile.read_text())
    assert len(procs.running_groups()) >= 1
    started = time.monotonic()
    procs.kill_running(grace_s=1.0)
    worker.join(30)  # the command would sleep 60 s: ending well before is the point (a loaded host is slow)
    assert not worker.is_alive() and time.monotonic() - started < 30
    assert results and not results[0].ok
    assert not _alive(child)  # the command's own child went with its group
    assert procs.running_groups() == []
