"""Many hosts on Dask: what the scheduler and the artifact shipping cost against a single-host run.

A real `dask scheduler` and one real `etfarm worker` (own cache, so its blob store starts empty)
on 127.0.0.1, offering one local device; the client is this process. Export and runner build are
warmed first and excluded (both paths share them). Measured, medians of --rounds:

- scheduling overhead per task: submit + result of a no-op task that needs the device resource
  (`pure=False`), one at a time (latency) and 100 at once (throughput);
- artifact shipping: the job's files (runner, libs, model) to a worker with an empty store (cold),
  and again once it has them (warm: one question, nothing sent);
- the same job (tiny_cnn, 3 runs x 20 iterations) single-host (`run_job`) vs through Dask
  (`run_distributed`), cold (first run: ships) and warm; ratio against the single-host run.

    .venv/bin/python -m benchmarks.bench_farm [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from device_agents import DeviceSpec
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.base.progress import Progress
from orchestrator.results.model import JobOptions
from orchestrator.run.engine.job import run_job

MODEL = str(Path(__file__).resolve().parents[1] / "configs" / "models" / "tiny_cnn.py") + ":build"
OPTIONS = JobOptions(runs=3, iterations=20, warmup=3, untraced_runs=0)
DEVICE = "loc"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"nothing listens on {port}")


def _noop(x: int) -> int:
    return x


def _clear_store() -> None:
    from orchestrator.farm.blobs import store_dir

    shutil.rmtree(store_dir(), ignore_errors=True)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from distributed import Client

    from orchestrator.farm.blobs import refs_for, ship
    from orchestrator.farm.client import FarmOptions, run_distributed

    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        try:
            port = _free_port()
            address = f"tcp://127.0.0.1:{port}"
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                           "--port", str(port), "--no-dashboard"], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, start_new_session=True))
            _wait_port(port)
            config = root / "devices.yaml"
            config.write_text(f"devices:\n  {DEVICE}: {{transport: local, workdir: {root / 'worker-dev'}}}\n")
            env = {**os.environ, "ETFARM_CACHE_DIR": str(root / "worker-cache")}
            procs.append(subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "worker", "--scheduler", address,
                                           "--config", str(config), "--listen-host", "127.0.0.1"], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
            client = Client(address, timeout=60)
            client.wait_for_workers(1, timeout=60)
            worker = next(iter(client.scheduler_info(n_workers=-1)["workers"]))
            local = DeviceSpec(DEVICE, "host", str(root / "host-dev"))
            spec = parse_model_spec(MODEL)

            def single(label: str) -> float:
                started = time.monotonic()
                result = run_job([local], [spec], backend="xnnpack", options=OPTIONS, out=root / label,
                                 progress=Progress(quiet=True))
                assert result.exit_code == 0, label
                return time.monotonic() - started

            def distributed(label: str) -> float:
                started = time.monotonic()
                result = run_distributed([DEVICE], [spec], backend="xnnpack", options=OPTIONS, out=root / label,
                                         progress=Progress(quiet=True), farm=FarmOptions(address))
                assert result.exit_code == 0, label
                return time.monotonic() - started

            single("warm-up")  # export + build out of the way
            figures: dict[str, Any] = {}
            figures["dist_cold_s"] = distributed("dist-cold")
            figures["single_s"] = _median([single(f"single-{i}") for i in range(args.rounds)])
            figures["dist_warm_s"] = _median([distributed(f"dist-{i}") for i in range(args.rounds)])

            resources = {f"dev-{DEVICE}": 1}
            latency = []
            for i in range(50 * args.rounds):
                started = time.perf_counter()
                client.submit(_noop, i, pure=False, resources=resources).result()
                latency.append(time.perf_counter() - started)
            figures["task_latency_ms"] = _median(latency) * 1000
            batch = []
            for _ in range(args.rounds):
                started = time.perf_counter()
                client.gather(client.map(_noop, range(100), pure=False, resources=resources))
                batch.append((time.perf_counter() - started) / 100)
            figures["task_throughput_ms"] = _median(batch) * 1000

            job = Path(next((root / "dist-cold").glob("manifest.json")).parent)
            from orchestrator.results.model import load_manifest

            model = load_manifest(job).models[0]
            files = {f"model/{Path(p).name}": Path(p) for p in (model.pte, model.etrecord, model.inputs,
                                                                model.reference_outputs) if p}
            from orchestrator.artifacts.build import build_runner

            build = build_runner("host")
            files.update({f"runner/{rel}": path for rel, path in build.stage_files().items()})
            _, by_hash = refs_for(files)
            cold, warm, sent = [], [], 0
            for _ in range(args.rounds):
                client.run(_clear_store, workers=[worker])
                started = time.perf_counter()
                sent = ship(client, worker, by_hash).bytes_sent
                cold.append(time.perf_counter() - started)
                started = time.perf_counter()
                assert ship(client, worker, by_hash).sent == 0
                warm.append(time.perf_counter() - started)
            figures.update(ship_files=len(by_hash), ship_mb=sent / 1e6, ship_cold_s=_median(cold),
                           ship_warm_ms=_median(warm) * 1000)
            client.close()
        finally:
            for proc in reversed(procs):
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    figures["dist_warm_ratio"] = figures["dist_warm_s"] / figures["single_s"]
    figures["dist_cold_ratio"] = figures["dist_cold_s"] / figures["single_s"]
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"scheduling: {figures['task_latency_ms']:.1f} ms per task one at a time, "
          f"{figures['task_throughput_ms']:.2f} ms per task in a batch of 100")
    print(f"shipping: {figures['ship_files']} files, {figures['ship_mb']:.1f} MB to an empty worker in "
          f"{figures['ship_cold_s']:.2f} s; {figures['ship_warm_ms']:.1f} ms when it has them (nothing sent)")
    print(f"job (tiny_cnn, 3 runs x 20): single-host {figures['single_s']:.2f} s, Dask warm {figures['dist_warm_s']:.2f} s "
          f"({figures['dist_warm_ratio']:.2f}x), Dask cold {figures['dist_cold_s']:.2f} s ({figures['dist_cold_ratio']:.2f}x)")


if __name__ == "__main__":
    main()
