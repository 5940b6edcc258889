"""Host overhead per process run over a slow link: the run loop before and after issue 10.

    .venv/bin/python -m benchmarks.bench_runloop [--rtt-ms 20] [--runs 10] [--json]

A board behind a 20 ms round trip is the testbed's sshd (and the testbed's adb device daemon)
behind a delaying TCP proxy on loopback (tests/integration/testbed/delayproxy.py; the kernel has
no netem). The same staged runner and model (tiny_mlp, XNNPACK, ETDump on: two files come back
per run) run R process runs per variant, variants alternating run by run so they share the
machine's load. Per process run:

    host overhead = host wall time of the process run - the runner's own time (`runner_ms`:
                    from its main() to its result line: loads, warmup, executions, calibration)

Variants:
- before: the old loop, six device commands per run (rm, mkdir, describe, the runner, then a
  stat + a pull per file), as orchestrator/run/engine/session.py did before this change;
- step+sftp: one device command (device_agents/step.py), files pulled over the job's open SFTP
  session (ssh) or adb sync (adb), sizes from the step's listing, sha256 checked;
- step+stream: one device command, files back on the same stream, a new session per run;
- step+stream+shell: the same command written to one long-lived device shell per job (ssh; adb
  has no such shell here and runs it as step+stream). What etfarm uses.

Target (issue 10): step+stream <= 150 ms per process run over 20 ms RTT, goal 60 ms; before ~880.
Exits 1 when the ssh target is missed. Figures: benchmarks/README.md ("Run loop").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integration")]

from testbed.delayproxy import DelayProxy  # noqa: E402

from device_agents import DeviceSpec, create_agent  # noqa: E402
from device_agents.adb.settings import AdbSettings  # noqa: E402
from device_agents.base import DeviceAgent  # noqa: E402
from device_agents.step import StepRequest, run_step, step_files  # noqa: E402
from orchestrator.artifacts.build import RUNNER_REL, build_runner, runner_env  # noqa: E402
from orchestrator.artifacts.lowering import export_model  # noqa: E402
from orchestrator.artifacts.modelspec import parse_model_spec  # noqa: E402
from orchestrator.emulate.adbserver import start_adb_device, start_adb_server  # noqa: E402
from orchestrator.emulate.sshd import start_sshd  # noqa: E402
from orchestrator.run.runner_contract import RunnerInvocation, parse_result  # noqa: E402

TARGET_MS, GOAL_MS = 150.0, 60.0
MODEL = str(ROOT / "configs" / "models" / "tiny_mlp.py") + ":build"
HUGE = 1 << 62


def invocation(agent: DeviceAgent, label: str) -> RunnerInvocation:
    return RunnerInvocation(runner=agent.remote_path(RUNNER_REL), model=agent.remote_path("models/m.pte"),
                            inputs=None, out_dir=agent.remote_path(f"out/{label}"), iterations=5, warmup=1, traced=True)


def before(agent: DeviceAgent, label: str, dest: Path) -> float:
    """The old loop: rm, mkdir, describe, run, then stat + pull per file. Returns runner_ms."""
    inv = invocation(agent, label)
    agent.remove(f"out/{label}")
    agent.check(["mkdir", "-p", "--", inv.out_dir])
    agent.describe()
    result = agent.check(inv.argv(), cwd=agent.spec.workdir, env=runner_env(agent.spec.workdir), timeout_s=120,
                         use_exec_prefix=True)
    for name in inv.expected_files():
        agent.fetch(f"out/{label}/{name}", dest)
    return parse_result(result.stdout, inv, label).runner_ms


def step(stream: bool, persistent: bool) -> Callable[[DeviceAgent, str, Path], float]:
    def one(agent: DeviceAgent, label: str, dest: Path) -> float:
        inv = invocation(agent, label)
        request = StepRequest(out_rel=f"out/{label}", argv=inv.argv(), timeout_s=120, env=runner_env(agent.spec.workdir),
                              max_stream_file_bytes=HUGE if stream else -1, persistent=persistent,
                              static_facts=False)
        result = run_step(agent, request, dest)
        assert result.ok and set(inv.expected_files()) <= set(result.files), result.tail()
        return parse_result(result.stdout, inv, label).runner_ms
    return one


VARIANTS = {"before": before, "step+sftp": step(stream=False, persistent=False),
            "step+stream": step(stream=True, persistent=False), "step+stream+shell": step(stream=True, persistent=True)}


def measure(spec: DeviceSpec, files: dict[str, Path], runs: int, dest: Path) -> dict[str, list[float]]:
    overhead: dict[str, list[float]] = {name: [] for name in VARIANTS}
    agent = create_agent(spec)
    with agent:
        agent.stage(files)
        for name, variant in VARIANTS.items():  # one unmeasured round: caches, SFTP session
            variant(agent, f"warm-{name}", dest / "warm")
        for k in range(runs):
            for name, variant in VARIANTS.items():
                started = time.perf_counter()
                runner_ms = variant(agent, f"{name}-{k}", dest / name / str(k))
                overhead[name].append((time.perf_counter() - started) * 1000.0 - runner_ms)
    return overhead


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt-ms", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    build = build_runner("host")
    model = export_model(parse_model_spec(MODEL), "xnnpack")
    files = {**build.stage_files(), **step_files(), "models/m.pte": model.pte}
    one_way = args.rtt_ms / 2000.0
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sshd = start_sshd(root / "sshd")
        try:
            with DelayProxy(sshd.port, one_way) as proxy:
                spec = sshd.spec("slow-ssh", root / "ssh-workdir", port=proxy.port)
                # The proxy's port is not in known_hosts: trust the same key under it.
                Path(spec.settings.known_hosts).write_text(  # type: ignore[attr-defined]
                    f"[127.0.0.1]:{proxy.port} {sshd.host_key_line}\n")
                results["ssh"] = measure(spec, files, args.runs, root / "ssh-out")
        finally:
            sshd.stop()
        server = start_adb_server(root / "adb-server")
        try:
            device = start_adb_device(server, root / "adb-device")
            try:
                with DelayProxy(device.port, one_way) as proxy:
                    serial = f"127.0.0.1:{proxy.port}"
                    connected = server.cmd("connect", serial)
                    assert "connected to" in connected.stdout, connected.stdout + connected.stderr
                    spec = DeviceSpec("slow-adb", "host", str(device.root / "etfarm"),
                                      settings=AdbSettings(serial, adb_host="127.0.0.1", adb_port=server.port))
                    results["adb"] = measure(spec, files, args.runs, root / "adb-out")
                    server.cmd("disconnect", serial)
            finally:
                device.stop()
        finally:
            server.stop()
    if args.json:
        print(json.dumps(results))
    print(f"host overhead per process run, {args.rtt_ms:.0f} ms RTT, median of {args.runs} (min-max):")
    for transport, figures in results.items():
        anchor = statistics.median(figures["before"])
        for name, values in figures.items():
            med = statistics.median(values)
            print(f"  {transport:4} {name:18} {med:7.1f} ms  ({min(values):6.1f}-{max(values):6.1f})  "
                  f"{anchor / med:5.1f}x faster than before")
    best = statistics.median(results["ssh"]["step+stream+shell"])
    verdict = "GOAL MET" if best <= GOAL_MS else "TARGET MET" if best <= TARGET_MS else "MISSED"
    print(f"ssh step+stream+shell {best:.1f} ms: target <= {TARGET_MS:.0f} ms, goal {GOAL_MS:.0f} ms: {verdict}")
    return 0 if best <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
