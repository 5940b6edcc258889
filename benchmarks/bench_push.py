"""Push a model over SSH: etfarm's SSHAgent against scp, same loopback sshd, one run.

    python benchmarks/bench_push.py [--size-mb 100] [--rounds 5] [--json]

Starts a private sshd (the integration testbed's) and alternates every variant
round by round, so all see the same machine load; reports medians.

- scp: a whole `scp` run (process start, handshake, auth, SFTP session, transfer),
  with OpenSSH's default cipher and with aes128-gcm (the agent's cipher);
- scp of an empty file: the same run without the transfer. The difference is
  scp's transfer time, comparable to the agent's;
- agent transfer: `SSHAgent._push` on an open connection, the stage step itself;
- agent cold: a new agent (connect, mkdir workdir, push, close), like one scp run;
- agent stage: the whole `stage()`: local and remote sha256, push, verify.

Target (issue 3): transfer throughput >= 0.9x scp's, against the faster scp variant;
an unchanged re-stage pushes 0 bytes. Exits 1 when either fails.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integration")]

from device_agents.ssh import SSHAgent  # noqa: E402
from orchestrator.emulate.sshd import SshTestHost, start_sshd  # noqa: E402

TARGET_RATIO = 0.9
GCM = "aes128-gcm@openssh.com"


def scp_push(host: SshTestHost, local: Path, remote: Path, *extra: str) -> float:
    argv = [
        "scp", "-q", "-P", str(host.port), "-i", str(host.client_key),
        "-o", f"UserKnownHostsFile={host.known_hosts}", "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
        *extra, str(local), f"{host.user}@127.0.0.1:{remote}",
    ]  # fmt: skip
    before = _children_cpu()
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    CPU.setdefault("scp_client", []).append(_children_cpu() - before)
    return elapsed


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# CPU seconds spent on the host side of each push: the scp process, or this process.
CPU: dict[str, list[float]] = {}


def timed(fn: Callable[..., object], *args: object, cpu_key: str | None = None) -> float:
    cpu = time.process_time()
    started = time.perf_counter()
    fn(*args)
    elapsed = time.perf_counter() - started
    if cpu_key:
        CPU.setdefault(cpu_key, []).append(time.process_time() - cpu)
    return elapsed


def measure(size_mb: int, rounds: int) -> dict[str, object]:
    size = size_mb * 1_000_000
    with tempfile.TemporaryDirectory(prefix="etfarm-bench-push-") as tmp:
        tmpdir = Path(tmp)
        model, empty = tmpdir / "model.pte", tmpdir / "empty.pte"
        empty.write_bytes(b"")
        with open(model, "wb") as fh:  # incompressible, like a real .pte
            for _ in range(size_mb):
                fh.write(os.urandom(1_000_000))
        host = start_sshd(tmpdir / "sshd")
        workdir = tmpdir / "device"
        workdir.mkdir()
        t: dict[str, list[float]] = {k: [] for k in ("scp", "scp_gcm", "scp0", "scp0_gcm", "transfer", "cold", "stage")}
        try:
            with SSHAgent(host.spec("bench", workdir)) as agent:

                def cold(rel: str) -> None:
                    with SSHAgent(host.spec("bench-cold", workdir)) as fresh:
                        fresh._push(model, fresh.remote_path(rel))

                for k in range(rounds):
                    t["scp"].append(scp_push(host, model, workdir / "scp.pte"))
                    CPU.pop("scp_client")  # keep the gcm runs only: the agent's cipher
                    t["scp_gcm"].append(scp_push(host, model, workdir / "scp.pte", "-c", GCM))
                    gcm_cpu = CPU.pop("scp_client")
                    t["scp0"].append(scp_push(host, empty, workdir / "scp0.pte"))
                    t["scp0_gcm"].append(scp_push(host, empty, workdir / "scp0.pte", "-c", GCM))
                    empty_cpu = CPU.pop("scp_client")
                    CPU.setdefault("scp_transfer", []).append(gcm_cpu[-1] - empty_cpu[-1])
                    t["transfer"].append(timed(agent._push, model, agent.remote_path("push.pte"), cpu_key="agent"))
                    t["cold"].append(timed(cold, "cold.pte"))
                    t["stage"].append(timed(agent.stage, {f"stage-{k}/model.pte": model}))
                    agent.check(["rm", "-rf", "--", agent.remote_path(f"stage-{k}")])
                agent.stage({"again/model.pte": model})
                started = time.perf_counter()
                again = agent.stage({"again/model.pte": model})
                restage_s = time.perf_counter() - started
                cipher = agent.connection().link.transport().local_cipher
                write_bytes = agent._write_bytes
        finally:
            host.stop()

    m = {k: statistics.median(v) for k, v in t.items()}
    scp_transfer = min(m["scp"] - m["scp0"], m["scp_gcm"] - m["scp0_gcm"])
    scp_wall = min(m["scp"], m["scp_gcm"])
    return {
        "size_bytes": size,
        "rounds": rounds,
        "agent_cipher": cipher,
        "sftp_write_request_bytes": write_bytes,
        **{f"{k}_s": round(v, 3) for k, v in m.items()},
        "scp_transfer_s": round(scp_transfer, 3),
        "throughput_ratio": round(scp_transfer / m["transfer"], 2),
        "wall_ratio_warm": round(scp_wall / m["transfer"], 2),
        "wall_ratio_cold": round(scp_wall / m["cold"], 2),
        "scp_client_transfer_cpu_s": round(statistics.median(CPU["scp_transfer"]), 3),
        "agent_transfer_cpu_s": round(statistics.median(CPU["agent"]), 3),
        "restage_bytes_pushed": again.bytes_pushed,
        "restage_s": round(restage_s, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()
    r = measure(args.size_mb, args.rounds)
    ok = r["throughput_ratio"] >= TARGET_RATIO and r["restage_bytes_pushed"] == 0  # type: ignore[operator]
    if args.json:
        print(json.dumps(r | {"ok": ok}))
        return 0 if ok else 1
    size = float(r["size_bytes"])  # type: ignore[arg-type]

    def row(label: str, seconds: float, note: str = "") -> None:
        rate = f"{size / seconds / 1e6:7.1f} MB/s" if seconds > 0 else " " * 12
        print(f"  {label:<34}{seconds:7.3f} s {rate}  {note}")

    print(f"push {args.size_mb} MB over loopback SSH: median of {args.rounds} interleaved rounds")
    row("scp (default cipher)", r["scp_s"])  # type: ignore[arg-type]
    row(f"scp -c {GCM}", r["scp_gcm_s"])  # type: ignore[arg-type]
    print(f"  {'scp of an empty file (setup only)':<34}{r['scp0_s']:7.3f} s / {r['scp0_gcm_s']:.3f} s (gcm)")
    row("scp transfer (run - setup, best)", r["scp_transfer_s"])  # type: ignore[arg-type]
    row(f"agent transfer ({r['agent_cipher']})", r["transfer_s"], f"{r['throughput_ratio']}x scp transfer throughput")  # type: ignore[arg-type]
    row("agent cold (connect+mkdir+push)", r["cold_s"], f"{r['wall_ratio_cold']}x a whole scp run")  # type: ignore[arg-type]
    row("agent stage (sha256 + push + verify)", r["stage_s"])  # type: ignore[arg-type]
    print(f"  {'host CPU of the transfer':<34}{r['agent_transfer_cpu_s']:7.3f} s agent (Python) vs "
          f"{r['scp_client_transfer_cpu_s']:.3f} s scp client (C), gcm")  # fmt: skip
    print(f"  {'unchanged re-stage':<34}{r['restage_s']:7.3f} s   {r['restage_bytes_pushed']} bytes pushed")
    print(f"target: transfer throughput >= {TARGET_RATIO}x scp and 0 bytes on re-stage: {'OK' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
