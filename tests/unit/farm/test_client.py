"""Client-side rules without a cluster: where a worker's files land, TLS options, status lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.base.errors import DeviceError, UsageError
from orchestrator.farm.executor import inside
from orchestrator.farm.security import make_security
from orchestrator.farm.status import WorkerRow, status_lines


def test_tls_needs_all_three_files(tmp_path: Path) -> None:
    assert make_security(None, None, None) is None
    with pytest.raises(UsageError, match="--tls-cert, --tls-key: TLS needs"):
        make_security(tmp_path / "ca.pem", None, None)
    with pytest.raises(UsageError, match="no such file"):
        make_security(tmp_path / "ca.pem", tmp_path / "c.pem", tmp_path / "k.pem")


def test_status_lines_name_devices_and_running_tasks() -> None:
    rows = [WorkerRow("tcp://1", "wa", {"pixel": True, "rpi": False}, ("etfarm-r-pixel-m",))]
    assert status_lines(rows, "tcp://s") == ["tcp://s: 1 worker(s)", "wa tcp://1: pixel (online), rpi (offline)",
                                              "  running etfarm-r-pixel-m"]
    assert status_lines([], "tcp://s") == ["tcp://s: no workers"]


@pytest.mark.parametrize("rel", ["../x", "/etc/passwd", "other/m/run-1/etdump.etdp", "d/../../x", "d"])
def test_files_from_a_worker_land_only_under_their_device(tmp_path: Path, rel: str) -> None:
    with pytest.raises(DeviceError, match="outside d/"):
        inside(tmp_path, "d", rel)


def test_a_file_of_the_device_lands_in_its_subtree(tmp_path: Path) -> None:
    assert inside(tmp_path, "d", "d/m/run-1/etdump.etdp") == tmp_path / "d" / "m" / "run-1" / "etdump.etdp"


class _Client:
    """A distributed.Client as far as DaskFarm.lost reads it."""

    def __init__(self, status: str) -> None:
        self.status = status


@pytest.mark.parametrize(("status", "raised", "lost"), [
    ("running", None, False),
    ("running", OSError("disk full"), False),  # a local error is not the scheduler's
    ("closed", None, True),
    ("running", "comm", True),  # the connection its death closed raises before the client's status changes
])
def test_a_connection_closed_mid_call_is_the_scheduler_lost(status: str, raised: object, lost: bool) -> None:
    from distributed.comm.core import CommClosedError

    from orchestrator.farm.dask import DaskFarm

    error = CommClosedError("in <TCP (closed) ConnectionPool.run_function>: ConnectionResetError") \
        if raised == "comm" else raised
    assert DaskFarm(_Client(status), None).lost(error) is lost  # type: ignore[arg-type]
