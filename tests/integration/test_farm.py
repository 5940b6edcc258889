"""Many hosts on Dask: a REAL `dask scheduler` process and REAL `etfarm worker` processes on 127.0.0.1.

Each worker owns its own SSH device (a private sshd from the testbed) and has its own cache
(blob store, device locks), as two USB hosts would. The client is `etfarm run --scheduler`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from testbed import free_port, missing, wait_port  # noqa: E402

from device_agents import DeviceSpec  # noqa: E402
from orchestrator.artifacts.tensorfile import read_tensors, write_tensors  # noqa: E402
from orchestrator.base.codec import encode
from orchestrator.emulate.sshd import SshTestHost  # noqa: E402
from orchestrator.farm.status import farm_status  # noqa: E402
from orchestrator.run import DeviceStatus, JobStatus, ModelStatus, load_manifest  # noqa: E402
from tests.helpers.exports import export_ahead  # noqa: E402
from tests.helpers.inspector_stats import assert_stats_equal_inspector, measured_samples  # noqa: E402
from tests.helpers.inventory import write_inventory  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TINY = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"
SMALL_RUN = ("--runs", "2", "--iterations", "3", "--warmup", "1", "--untraced-runs", "0", "--no-report")
STARTUP_SEC = 60.0


def etfarm(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def _start(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


class Farm:
    """One scheduler and the workers a test starts; every process killed at teardown."""

    def __init__(self, root: Path, tls: tuple[str, ...] = ()) -> None:
        self.root = root
        self.port = free_port()
        self.tls = tls  # --tls-ca-file CA --tls-cert CERT --tls-key KEY, for every process
        self.address = f"{'tls' if tls else 'tcp'}://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        self.client: Any = None  # a Dask client of this process, made on the first `status()`
        protocol = ("--protocol", "tls") if tls else ()
        self.scheduler = _start([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                 "--port", str(self.port), "--no-dashboard", *protocol, *tls], root / "scheduler.log")
        self.procs.append(self.scheduler)
        wait_port(self.port, STARTUP_SEC, alive=lambda: self.scheduler.poll() is None)

    def worker(self, name: str, config: Path) -> subprocess.Popen[bytes]:
        env = {**os.environ, "ETFARM_CACHE_DIR": str(self.root / f"cache-{name}")}
        proc = _start([sys.executable, "-m", "orchestrator.cli", "worker", "--scheduler", self.address,
                       "--config", str(config), "--name", name, "--listen-host", "127.0.0.1", "--probe-interval", "0.5", *self.tls],
                      self.root / f"worker-{name}.log", env)
        self.procs.append(proc)
        self.workers[name] = proc
        return proc

    def cli_status(self) -> dict:
        """`etfarm farm status --json`, as a user runs it."""
        result = etfarm("farm", "status", "--scheduler", self.address, "--json", *self.tls, timeout=60)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def status(self) -> dict:
        """What `etfarm farm status --json` says, through the same `farm_status` in this process: the tests poll
        it while workers start, and a new `etfarm` process per poll cost a second of CPU each (a TLS farm still
        asks the command, which holds the certificates)."""
        if self.tls:
            return self.cli_status()
        if self.client is None:
            from distributed import Client

            self.client = Client(self.address, timeout=STARTUP_SEC, set_as_default=False)
        return {"scheduler": self.address, "workers": [encode(row) for row in farm_status(self.client)]}

    def wait_online(self, device: str, timeout_s: float = STARTUP_SEC) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status = self.status()
            if any(w["devices"].get(device) for w in status["workers"]):
                return status
            time.sleep(0.5)
        raise AssertionError(f"{device} never came online: {self.status()}\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(self.root.glob("*.log")))

    def stop(self) -> None:
        if self.client is not None:
            self.client.close(timeout=10)
        for proc in reversed(self.procs):
            _kill(proc)


@pytest.fixture
def farm(tmp_path: Path) -> Iterator[Farm]:
    root = tmp_path / "farm"
    root.mkdir()
    farm = Farm(root)
    yield farm
    farm.stop()


@pytest.fixture
def two_hosts(ssh_server_factory: Callable[[], SshTestHost], tmp_path: Path) -> tuple[DeviceSpec, DeviceSpec]:
    return (ssh_server_factory().spec("host-a", tmp_path / "work-a"),
            ssh_server_factory().spec("host-b", tmp_path / "work-b"))


def _check_stats(out: Path, devices: tuple[str, ...]) -> pd.DataFrame:
    manifest = json.loads((out / "manifest.json").read_text())
    etrecord = Path(manifest["models"]["tiny_cnn"]["etrecord"])
    stats = pd.read_csv(out / "stats.csv")
    assert tuple(dict.fromkeys(stats["device"])) == devices
    for name in devices:
        etdumps = sorted((out / name / "tiny_cnn").glob("run-*/etdump.etdp"))
        assert len(etdumps) == 2
        own = stats[stats["device"] == name].drop(columns=["device", "model"])
        assert_stats_equal_inspector(own, etdumps, etrecord)
    return stats


@pytest.mark.slow
def test_one_run_across_two_workers_writes_what_a_local_run_writes(
        farm: Farm, two_hosts: tuple[DeviceSpec, DeviceSpec], tmp_path: Path) -> None:
    a, b = two_hosts
    farm.worker("wa", write_inventory(tmp_path / "a.yaml", [a]))
    farm.worker("wb", write_inventory(tmp_path / "b.yaml", [b]))
    farm.wait_online("host-a")
    farm.wait_online("host-b")
    status = farm.cli_status()
    assert {w["name"]: w["devices"] for w in status["workers"]} == {"wa": {"host-a": True}, "wb": {"host-b": True}}
    store = tmp_path / "results.db"

    out = tmp_path / "dist"
    export_ahead(TINY)
    result = etfarm("run", "--scheduler", farm.address, "--devices", "host-a,host-b", "--model", TINY, *SMALL_RUN,
                    "--out", str(out), "--store", str(store))
    assert result.returncode == 0, result.stderr[-4000:] + farm.logs()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "ok"
    for name in ("host-a", "host-b"):
        device = manifest["devices"][name]
        assert device["status"] == "ok", device
        assert device["models"]["tiny_cnn"]["verification"]["status"] == "pass"
        assert device["facts"], "device facts came back from the worker"
        assert (out / name / "tiny_cnn" / "device.json").is_file()
        # Progress streamed from the workers, printed like local progress.
        assert f"[{name}] tiny_cnn: run 2/2" in result.stderr
    dist_stats = _check_stats(out, ("host-a", "host-b"))
    # The samples came back from the workers in memory and lie beside stats.csv, every one measured (results/samples.py)
    from orchestrator.results.samples import read_samples

    recorded = read_samples(out / "samples.npz")
    assert recorded is not None and sorted(recorded.pairs()) == [("host-a", "tiny_cnn"), ("host-b", "tiny_cnn")]
    assert all((found := recorded.pair(d, "tiny_cnn")) is not None and found.samples.duration_ms.size
               == measured_samples(dist_stats[dist_stats["device"] == d]).sum() for d in ("host-a", "host-b"))
    # The artifacts went to each worker once; a second run ships nothing.
    assert result.stderr.count("sent 0 file(s)") == 0
    again = etfarm("run", "--scheduler", farm.address, "--devices", "host-a,host-b", "--model", TINY, *SMALL_RUN,
                   "--out", str(tmp_path / "again"), "--no-store")
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count("sent 0 file(s), 0.0 MB") == 2, again.stderr
    # The store holds the run as a local run's would be held.
    history = etfarm("history", "--store", str(store), "--json")
    assert history.returncode == 0, history.stderr
    assert manifest["run_id"] in history.stdout

    # A single-host run of the same job on the same devices: the same table (events, samples).
    local = etfarm("run", "--config", str(write_inventory(tmp_path / "both.yaml", [a, b])), "--devices", "host-a,host-b",
                   "--model", TINY, *SMALL_RUN, "--out", str(tmp_path / "local"), "--no-store")
    assert local.returncode == 0, local.stderr[-3000:]
    local_stats = _check_stats(tmp_path / "local", ("host-a", "host-b"))
    keys = ["device", "model", "event_block", "event_index", "event_name"]
    pd.testing.assert_frame_equal(dist_stats[keys], local_stats[keys])
    # every sample measured (kept + contended): which executions waited for a CPU is the host's load, not the farm's
    assert measured_samples(dist_stats).tolist() == measured_samples(local_stats).tolist()
    assert list(dist_stats.columns) == list(local_stats.columns)


def _run_killing_worker_a(farm: Farm, out: Path, restart: Path | None, *extra: str, at: str = "run 1/2",
                          before_kill: Callable[[], None] = lambda: None,
                          after_kill: Callable[[], None] = lambda: None) -> tuple[int, str]:
    """Run over host-a and host-b; kill worker wa once host-a says `at` (and `before_kill()` returned),
    restart it with `restart` if given."""
    argv = [sys.executable, "-m", "orchestrator.cli", "run", "--scheduler", farm.address, "--devices", "host-a,host-b",
            "--model", TINY, "--runs", "2", "--iterations", "3", "--warmup", "1", "--untraced-runs", "0",
            "--cooldown", "3", "--no-report", "--no-store", "--out", str(out), *extra]
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        seen = ""
        assert client.stderr is not None
        while f"[host-a] tiny_cnn: {at}" not in seen:  # host-a is mid-run (cooling down before that run)
            line = client.stderr.readline()
            assert line, seen + farm.logs()
            seen += line
        running = {w["name"]: w["running"] for w in farm.status()["workers"]}
        assert any("-host-a-tiny_cnn" in key for key in running["wa"]), running  # farm status: who runs what
        before_kill()
        _kill(farm.workers["wa"])
        after_kill()
        if restart is not None:
            farm.worker("wa2", restart)  # the device comes back on a new worker (empty cache: it lacks the artifacts)
        _, stderr = client.communicate(timeout=600)
    finally:
        _kill(client)  # type: ignore[arg-type]
    return client.returncode, seen + stderr


class RunnerGate:
    """An exec_prefix that holds runner starts on the device (the ssh testbed device is this host, so the
    test sees its files): the first `free` starts pass, later ones wait for the test's word. `cut()`
    (after the worker is killed) makes the waiting ones exit without starting the runner, so no orphan
    of the dead worker's task can race the resumed job; `open()` lets every later start through.
    The test decides when a run may happen, instead of racing a cooldown on a loaded machine."""

    WAIT_LIMIT = 600  # polls of 0.1 s: a test that forgets the gate is not held for ever

    def __init__(self, root: Path, free: int) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.script = root / "gate.sh"
        self.script.write_text(
            '#!/bin/sh\n'
            f'd={shlex.quote(str(root))}\n'
            'echo "$$" >> "$d/starts"\n'
            f'if [ "$(wc -l < "$d/starts")" -gt {free} ]; then\n'
            '  touch "$d/waiting-$$"\n'
            '  i=0\n'
            f'  while [ ! -e "$d/open" ] && [ $i -lt {self.WAIT_LIMIT} ]; do\n'
            '    if [ -e "$d/cut" ]; then rm -f "$d/waiting-$$"; exit 75; fi\n'
            '    sleep 0.1; i=$((i+1))\n'
            '  done\n'
            '  rm -f "$d/waiting-$$"\n'
            'fi\n'
            'exec "$@"\n')
        self.script.chmod(0o755)

    @property
    def prefix(self) -> tuple[str, ...]:
        return (str(self.script),)

    def cut(self) -> None:
        """The starts held now exit without running (their task's worker is gone)."""
        (self.root / "cut").touch()
        deadline = time.monotonic() + 10
        while list(self.root.glob("waiting-*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not list(self.root.glob("waiting-*")), "a held runner start did not leave the gate"
        (self.root / "cut").unlink()

    def open(self) -> None:
        (self.root / "open").touch()

    def held(self) -> None:
        """Until a runner start waits at the gate (its step is under way on the device)."""
        deadline = time.monotonic() + 120
        while not list(self.root.glob("waiting-*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(self.root.glob("waiting-*")), "no runner start reached the gate"


def _farm_of_two(farm: Farm, two_hosts: tuple[DeviceSpec, DeviceSpec], tmp_path: Path) -> Path:
    """Workers wa (host-a) and wb (host-b), both online; returns wa's inventory."""
    a, b = two_hosts
    config_a = write_inventory(tmp_path / "a.yaml", [a])
    farm.worker("wa", config_a)
    farm.worker("wb", write_inventory(tmp_path / "b.yaml", [b]))
    farm.wait_online("host-a")
    farm.wait_online("host-b")
    return config_a


@pytest.mark.slow
def test_a_killed_worker_s_task_runs_when_its_device_comes_back_and_lists_the_lost_try_as_one_host_does(
        farm: Farm, ssh_server_factory: Callable[[], SshTestHost], tmp_path: Path) -> None:
    """Run 1 is on host-a (its runner start held at a gate) when host-a's worker dies; the device comes back on a
    new worker, where the task runs again. The manifest lists the lost try as a single host lists a link lost
    under the same step (then retried): the same attempts."""
    host = ssh_server_factory()
    gate = RunnerGate(tmp_path / "gate", free=0)
    host_a = host.spec("host-a", tmp_path / "work-a", exec_prefix=gate.prefix)
    config_a = _farm_of_two(farm, (host_a, ssh_server_factory().spec("host-b", tmp_path / "work-b")), tmp_path)
    out = tmp_path / "dist"

    def let_the_next_try_through() -> None:
        gate.cut()  # the dead worker's held start ends without running
        gate.open()

    code, stderr = _run_killing_worker_a(farm, out, config_a, before_kill=gate.held, after_kill=let_the_next_try_through)
    assert code == 0, stderr[-4000:] + farm.logs()
    manifest = load_manifest(out)
    assert manifest.status is JobStatus.OK
    assert {d.name: d.status for d in manifest.devices} == {"host-a": "ok", "host-b": "ok"}
    _check_stats(out, ("host-a", "host-b"))
    assert stderr.count("[host-a] tiny_cnn: run 1/2") >= 2  # it started again on the new worker
    assert "[host-a] artifacts for" in stderr and "file(s) it lacked" in stderr  # which asked for the artifacts
    on_farm = manifest.device("host-a").attempts  # type: ignore[union-attr]
    assert [a.step for a in on_farm] == ["run tiny_cnn run-1"] and "was lost" in on_farm[0].error, on_farm

    # The same loss on one host: the link drops (sshd killed) while run 1 is held on host-a, and comes back.
    local_gate = RunnerGate(tmp_path / "local-gate", free=0)
    config = write_inventory(tmp_path / "local.yaml", [replace(host_a, exec_prefix=local_gate.prefix)])
    client = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "run", "--config", str(config), "--devices",
                               "host-a", "--model", TINY, *SMALL_RUN, "--no-store", "--out", str(tmp_path / "local")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        local_gate.held()
        host.kill_server()
        local_gate.cut()  # the cut-off step's held start ends without running
        host.start_again()
        local_gate.open()
        _, local_stderr = client.communicate(timeout=600)
    finally:
        _kill(client)  # type: ignore[arg-type]
    assert client.returncode == 0, local_stderr[-4000:]
    on_one_host = load_manifest(tmp_path / "local").device("host-a").attempts  # type: ignore[union-attr]
    assert [a.step for a in on_one_host] == [a.step for a in on_farm], on_one_host


@pytest.mark.slow
def test_a_device_that_never_comes_back_fails_after_the_deadline_then_resume_runs_only_it(
        farm: Farm, two_hosts: tuple[DeviceSpec, DeviceSpec], tmp_path: Path) -> None:
    gate = RunnerGate(tmp_path / "gate", free=0)  # host-a's run 1 is held until its worker is dead
    host_a, host_b = two_hosts
    config_a = _farm_of_two(farm, (replace(host_a, exec_prefix=gate.prefix), host_b), tmp_path)
    out = tmp_path / "dist"
    code, stderr = _run_killing_worker_a(farm, out, None, "--device-deadline", "3", after_kill=gate.cut)
    gate.open()
    assert code == 1, stderr[-4000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "partial"
    assert manifest["devices"]["host-b"]["status"] == "ok"
    failed = manifest["devices"]["host-a"]
    assert failed["status"] == "failed" and failed["blame"] == "infrastructure"
    assert "no worker offered the device for 3 s" in failed["error"]
    _check_stats(out, ("host-b",))

    # The device comes back on another worker: --resume (at the recorded scheduler) runs only host-a's task.
    kept = {p: p.stat().st_mtime_ns for p in (out / "host-b").rglob("*") if p.is_file()}
    farm.worker("wa2", config_a)
    farm.wait_online("host-a")
    resumed = etfarm("run", "--resume", str(out), "--no-store", "--no-report")
    assert resumed.returncode == 0, resumed.stderr[-4000:] + farm.logs()
    assert "1 (device, model) task with 2 process runs missing, 1 device complete" in resumed.stderr
    assert "[host-b]" not in resumed.stderr
    final = load_manifest(out)
    assert final.status == "ok" and final.run_id == manifest["run_id"]
    assert {d.name: d.status for d in final.devices} == {"host-a": "ok", "host-b": "ok"}
    assert final.device("host-a").error is None  # type: ignore[union-attr]
    assert {p: p.stat().st_mtime_ns for p in (out / "host-b").rglob("*") if p.is_file()} == kept
    _check_stats(out, ("host-a", "host-b"))


@pytest.mark.slow
def test_sigint_stops_the_farm_s_sessions_then_resume_completes_the_run(
        farm: Farm, two_hosts: tuple[DeviceSpec, DeviceSpec], tmp_path: Path) -> None:
    _farm_of_two(farm, two_hosts, tmp_path)
    out = tmp_path / "dist"
    argv = [sys.executable, "-m", "orchestrator.cli", "run", "--scheduler", farm.address, "--devices", "host-a,host-b",
            "--model", TINY, "--runs", "2", "--iterations", "3", "--warmup", "1", "--untraced-runs", "0",
            "--cooldown", "4", "--no-report", "--no-store", "--out", str(out)]
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        seen = ""
        assert client.stderr is not None
        while "[host-a] tiny_cnn: run 1/2" not in seen:  # host-a's session is running on its worker
            line = client.stderr.readline()
            assert line, seen + farm.logs()
            seen += line
        os.kill(client.pid, signal.SIGINT)
        stdout, stderr = client.communicate(timeout=120)
    finally:
        _kill(client)  # type: ignore[arg-type]
    assert client.returncode == 130, seen + stderr[-3000:]
    assert f"--resume {out}" in stdout
    interrupted = load_manifest(out)
    assert interrupted.status is JobStatus.INTERRUPTED
    assert interrupted.device("host-a").status is DeviceStatus.INTERRUPTED  # type: ignore[union-attr]
    # The workers were told: their sessions stop (runner killed, device lock released), nothing keeps running.
    deadline = time.monotonic() + 30
    while any(w["running"] for w in farm.status()["workers"]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not any(w["running"] for w in farm.status()["workers"]), farm.status()
    assert "interrupted by the client" in (farm.root / "worker-wa.log").read_text()

    resumed = etfarm("run", "--resume", str(out), "--scheduler", farm.address, "--no-store", "--no-report")
    assert resumed.returncode == 0, resumed.stderr[-4000:] + farm.logs()
    final = load_manifest(out)
    assert final.status is JobStatus.OK and final.run_id == interrupted.run_id
    _check_stats(out, ("host-a", "host-b"))


@pytest.mark.slow
def test_runs_finished_before_a_worker_dies_are_kept_and_resume_runs_only_the_rest(
        farm: Farm, two_hosts: tuple[DeviceSpec, DeviceSpec], tmp_path: Path) -> None:
    gate = RunnerGate(tmp_path / "gate", free=1)
    host_a, host_b = two_hosts
    # host-a's run 2 waits at the gate until worker wa is dead: run 1 must reach the client first.
    host_a = replace(host_a, exec_prefix=gate.prefix)
    config_a = _farm_of_two(farm, (host_a, host_b), tmp_path)
    out = tmp_path / "dist"

    def run_1_collected() -> None:  # streamed from the worker while its task still runs
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            device = load_manifest(out).device("host-a")
            model = device.model("tiny_cnn") if device is not None else None
            if model is not None and [r.label for r in model.runs] == ["run-1"]:
                return
            time.sleep(0.2)
        raise AssertionError(f"run-1 never reached the client: {load_manifest(out).device('host-a')}")

    code, stderr = _run_killing_worker_a(farm, out, None, "--device-deadline", "3", at="run 2/2",
                                         before_kill=run_1_collected, after_kill=gate.cut)
    gate.open()
    assert code == 1, stderr[-4000:]
    cut = load_manifest(out)
    model = cut.device("host-a").model("tiny_cnn")  # type: ignore[union-attr]
    assert model is not None and model.status is ModelStatus.PARTIAL and [r.label for r in model.runs] == ["run-1"]
    # Finished as one host finishes a model cut short: verified, the reason as its error, with its blame.
    assert model.verification is not None and model.verification.status == "pass", model
    assert "no worker offered the device" in (model.error or "") and model.blame == "infrastructure"
    assert [a.step for a in cut.device("host-a").attempts] == ["run tiny_cnn run-2"]  # type: ignore[union-attr]
    kept_etdump = (out / "host-a" / "tiny_cnn" / "run-1" / "etdump.etdp").read_bytes()
    assert kept_etdump, "the run's files came with it"
    stats = pd.read_csv(out / "stats.csv")  # and it is analysed, as a single-host partial model is
    execute = stats[(stats["device"] == "host-a") & (stats["event_name"] == "Method::execute")]
    assert list(measured_samples(execute)) == [3], stats  # run-1's 3 iterations

    farm.worker("wa2", config_a)  # the device is back, on a worker that never saw run-1's files
    farm.wait_online("host-a")
    resumed = etfarm("run", "--resume", str(out), "--no-store", "--no-report")
    assert resumed.returncode == 0, resumed.stderr[-4000:] + farm.logs()
    assert "1 (device, model) task with 1 process run missing" in resumed.stderr
    assert "[host-a] tiny_cnn: run 2/2" in resumed.stderr and "run 1/2" not in resumed.stderr
    final = load_manifest(out)
    assert final.status is JobStatus.OK and final.run_id == cut.run_id
    runs = final.device("host-a").model("tiny_cnn").runs  # type: ignore[union-attr]
    assert [r.label for r in runs] == ["run-1", "run-2"]
    assert runs[0].execute_ms == model.runs[0].execute_ms  # the same run, kept, not repeated
    assert (out / "host-a" / "tiny_cnn" / "run-1" / "etdump.etdp").read_bytes() == kept_etdump
    # Analysed over both runs: the kept one (shipped to the new worker with the task) and the new one.
    _check_stats(out, ("host-a", "host-b"))


def _wait_status(farm: Farm, device: str, online: bool, timeout_s: float = STARTUP_SEC) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(w["devices"].get(device) is online for w in farm.status()["workers"]):
            return
        time.sleep(0.5)
    raise AssertionError(f"{device} never became {'online' if online else 'offline'}: {farm.status()}")


@pytest.mark.slow
def test_an_offline_device_s_task_waits_and_runs_when_the_device_is_back(
        farm: Farm, ssh_server_factory: Callable[[], SshTestHost], tmp_path: Path) -> None:
    host = ssh_server_factory()
    farm.worker("wa", write_inventory(tmp_path / "a.yaml", [host.spec("host-a", tmp_path / "work-a")]))
    farm.wait_online("host-a")
    assert host.proc is not None
    os.kill(host.proc.pid, signal.SIGSTOP)  # accepts connections in the kernel's backlog, never answers
    try:
        _wait_status(farm, "host-a", online=False)
        out = tmp_path / "dist"
        client = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "run", "--scheduler", farm.address,
                                   "--devices", "host-a", "--model", TINY, *SMALL_RUN, "--device-deadline", "300",
                                   "--no-store", "--out", str(out)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        time.sleep(8)
        assert client.poll() is None, "the task waits for its device"
        assert not (out / "host-a" / "tiny_cnn").exists()
    finally:
        os.kill(host.proc.pid, signal.SIGCONT)
    try:
        _, stderr = client.communicate(timeout=600)
    finally:
        _kill(client)  # type: ignore[arg-type]
    assert client.returncode == 0, stderr[-4000:] + farm.logs()
    _check_stats(out, ("host-a",))


@pytest.mark.slow
def test_a_device_added_to_a_running_worker_becomes_usable(
        farm: Farm, two_hosts: tuple[DeviceSpec, DeviceSpec], tmp_path: Path) -> None:
    a, b = two_hosts
    config = write_inventory(tmp_path / "w.yaml", [a])
    farm.worker("w", config)
    farm.wait_online("host-a")
    write_inventory(config, [a, b])  # plugged in while the worker runs
    status = farm.wait_online("host-b")
    assert status["workers"][0]["devices"] == {"host-a": True, "host-b": True}
    out = tmp_path / "dist"
    result = etfarm("run", "--scheduler", farm.address, "--devices", "host-b", "--model", TINY, *SMALL_RUN,
                    "--no-store", "--out", str(out))
    assert result.returncode == 0, result.stderr[-4000:] + farm.logs()
    _check_stats(out, ("host-b",))


@pytest.mark.slow
def test_a_nightly_plan_runs_on_the_farm(farm: Farm, two_hosts: tuple[DeviceSpec, DeviceSpec], tmp_path: Path) -> None:
    a, _ = two_hosts
    farm.worker("wa", write_inventory(tmp_path / "a.yaml", [a]))
    farm.wait_online("host-a")
    report = tmp_path / "reports"
    plan = tmp_path / "plan.yaml"
    # host-a is known only to the farm's worker: a single-host nightly could not find it.
    plan.write_text(f"devices: [host-a]\nmodels: [{TINY!r}]\nruns: 2\nconfirm_max_runs: 4\niterations: 3\nwarmup: 1\n"
                    f"report: {report}\nscheduler: {farm.address}\n")
    store = tmp_path / "results.db"
    result = etfarm("nightly", "--plan", str(plan), "--store", str(store))
    assert result.returncode == 0, result.stderr[-4000:] + farm.logs()
    assert "new" in result.stdout and f"on {farm.address}" in result.stderr
    run_dir = Path(next(line.split(": ", 1)[1] for line in result.stdout.splitlines()
                        if line.startswith("run directory: ")))
    job = load_manifest(run_dir)
    assert job.config.scheduler == farm.address and job.device("host-a").status is DeviceStatus.OK  # type: ignore[union-attr]
    assert list(report.glob("nightly-*.md")) and list(report.glob("nightly-*.html"))
    history = etfarm("history", "--store", str(store), "--json")
    assert history.returncode == 0 and job.run_id in history.stdout


@pytest.mark.slow
def test_wrong_outputs_on_the_farm_mark_the_device_wrong_results(
        farm: Farm, two_hosts: tuple[DeviceSpec, DeviceSpec], tmp_path: Path) -> None:
    a, _ = two_hosts
    farm.worker("wa", write_inventory(tmp_path / "a.yaml", [a]))
    farm.wait_online("host-a")
    exported = tmp_path / "exported"
    made = etfarm("export", TINY, "--out", str(exported))
    assert made.returncode == 0, made.stderr[-2000:]
    reference = exported / "reference_outputs.etft"
    write_tensors(reference, [t + 0.5 for t in read_tensors(reference)])  # the reference no longer holds
    out = tmp_path / "dist"
    result = etfarm("run", "--scheduler", farm.address, "--devices", "host-a", "--model", str(exported / "model.pte"),
                    *SMALL_RUN, "--no-store", "--out", str(out))
    assert result.returncode == 1, result.stderr[-3000:] + farm.logs()
    job = load_manifest(out)
    device = job.device("host-a")
    assert device is not None and device.status is DeviceStatus.WRONG_RESULTS, device
    assert "differs from the reference" in (device.error or "") and job.status is JobStatus.FAILED  # as on one host
    assert "host-a: WRONG-RESULTS" in result.stdout
    assert (out / "stats.csv").is_file()  # the timings are kept


def test_an_unknown_device_is_a_usage_error_and_an_unreachable_scheduler_an_infrastructure_one(
        farm: Farm, tmp_path: Path) -> None:
    result = etfarm("run", "--scheduler", farm.address, "--devices", "nosuch", "--model", TINY, "--out",
                    str(tmp_path / "x"), timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: --devices: nosuch: no worker of") and result.stderr.count("\n") == 1
    dead = f"tcp://127.0.0.1:{free_port()}"
    result = etfarm("farm", "status", "--scheduler", dead, timeout=120)
    assert result.returncode == 3 and result.stderr.startswith(f"error: --scheduler {dead}: cannot connect"), result.stderr


@pytest.mark.slow
def test_the_single_host_path_never_imports_dask(tmp_path: Path) -> None:
    code = ("import sys\nfrom orchestrator.cli import main\n"
            f"code = main(['run', '--devices', 'local', '--model', {TINY!r}, '--runs', '1', '--iterations', '1', "
            f"'--warmup', '0', '--no-store', '--no-report', '--quiet', '--out', {str(tmp_path / 'out')!r}])\n"
            "assert code == 0, code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', 'orchestrator.farm')))\n"
            "print('orchestrator.farm' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[-2:] == ["[]", "False"], result.stdout


def _certificate(root: Path) -> tuple[str, ...]:
    """A CA and one certificate it signed (for 127.0.0.1), made with openssl."""
    root.mkdir()

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=root, check=True, capture_output=True, timeout=60)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=etfarm test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "host.key", "-out", "host.csr", "-subj", "/CN=127.0.0.1")
    (root / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "host.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
            "host.pem", "-days", "2", "-extfile", "ext.cnf")
    return ("--tls-ca-file", str(root / "ca.pem"), "--tls-cert", str(root / "host.pem"), "--tls-key", str(root / "host.key"))


def test_a_tls_scheduler_admits_certificate_holders_only(tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        missing("openssl is not installed (Debian openssl)")
    root = tmp_path / "farm"
    root.mkdir()
    farm = Farm(root, tls=_certificate(tmp_path / "pki"))
    try:
        config = tmp_path / "w.yaml"
        config.write_text(f"devices:\n  loc: {{transport: local, workdir: {tmp_path / 'loc'}}}\n")
        farm.worker("w", config)
        status = farm.wait_online("loc")
        assert status["workers"][0]["name"] == "w"
        # Without a certificate: refused, in one line, exit 2.
        plain = etfarm("farm", "status", "--scheduler", farm.address, timeout=120)
        assert plain.returncode == 2 and plain.stderr.count("\n") == 1, plain.stderr
        downgraded = etfarm("farm", "status", "--scheduler", farm.address.replace("tls://", "tcp://"), timeout=120)
        assert downgraded.returncode == 2, downgraded.stderr
    finally:
        farm.stop()


@pytest.mark.slow
def test_a_refused_host_key_and_a_crashing_runner_are_tried_once_as_on_one_host(
        farm: Farm, ssh_server_factory: Callable[[], SshTestHost], tmp_path: Path) -> None:
    """The same faults on the farm and on one host: the same attempts, blame, status and exit code. Neither is
    tried again (run/device/retry.py): a refusal would meet the same key, a crashing runner the same crash."""
    refusing = ssh_server_factory()  # answers probes, but the device's known_hosts does not know its key
    host_k = refusing.spec("host-k", tmp_path / "work-k", known_hosts=tmp_path / "empty" / "known_hosts")
    starts = tmp_path / "runner-starts"
    crash = ("sh", "-c", 'echo start >> "$0"; echo "the runner crashed" >&2; exit 7', str(starts))
    host_c = ssh_server_factory().spec("host-c", tmp_path / "work-c", exec_prefix=crash)
    inventory = write_inventory(tmp_path / "kc.yaml", [host_k, host_c])
    farm.worker("wk", inventory)
    farm.wait_online("host-k")
    farm.wait_online("host-c")

    runs = {}
    for where, argv in (("on-farm", ("--scheduler", farm.address)), ("local", ("--config", str(inventory)))):
        result = etfarm("run", *argv, "--devices", "host-k,host-c", "--model", TINY, *SMALL_RUN, "--no-store",
                        "--out", str(tmp_path / where))
        runner_starts = starts.read_text().count("start")
        starts.unlink()
        runs[where] = (result, load_manifest(tmp_path / where), runner_starts)
        assert result.returncode == 1, where + result.stderr[-3000:] + farm.logs()
        assert result.stderr.count("[host-k] connecting") == 1, result.stderr  # the refusal is not tried again
        assert runner_starts == 1, where  # nor the crash

    (_, on_farm, _), (_, local, _) = runs["on-farm"], runs["local"]
    for name in ("host-k", "host-c"):
        distributed, single = on_farm.device(name), local.device(name)
        assert distributed is not None and single is not None
        assert (distributed.status, distributed.blame, distributed.error) == (single.status, single.blame, single.error)
        assert [a.step for a in distributed.attempts] == [a.step for a in single.attempts]
    key, crashed = on_farm.device("host-k"), on_farm.device("host-c")
    assert key is not None and key.status is DeviceStatus.FAILED and key.blame == "infrastructure"
    assert "host key" in (key.error or "") and "unknown" in (key.error or "")
    assert [a.step for a in key.attempts] == ["connect"]
    assert crashed is not None and crashed.status is DeviceStatus.FAILED and "exited 7" in (crashed.error or "")
    assert [a.step for a in crashed.attempts] == ["run tiny_cnn run-1"]
    assert on_farm.status is local.status is JobStatus.FAILED
