"""The real runner: built with cmake against the executorch wheel, run on real .pte files.

Models are exported here for real (XNNPACK and portable), inputs written as ETFT,
outputs compared with eager torch, ETDumps read back with executorch's Inspector.
The linux-aarch64 build is cross-compiled and run under qemu-aarch64.

The cache defaults to a session tmp dir; export ETFARM_CACHE_DIR beforehand to keep
the downloaded aarch64 runtime (and the builds) across test runs.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from orchestrator.artifacts.build import RunnerBuild, build_runner, runner_env
from orchestrator.artifacts.tensorfile import read_tensors, write_tensors
from orchestrator.base import procs
from orchestrator.emulate.fleet import BOARDS, board_prefix
from tests.helpers.tools import missing

pytestmark = pytest.mark.slow

RUN_TIMEOUT_S = 300
WARMUP, EXECUTIONS = 2, 5
RTOL, ATOL = 1e-3, 1e-5


@dataclass(frozen=True)
class Model:
    name: str
    pte: Path
    inputs: Path
    expected: list[np.ndarray]


@pytest.fixture(scope="session")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    preset = os.environ.get("ETFARM_CACHE_DIR")
    root = Path(preset) if preset else tmp_path_factory.mktemp("etfarm-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ETFARM_CACHE_DIR", str(root))
        yield root


@pytest.fixture(scope="session")
def host_build(cache_root: Path) -> RunnerBuild:
    return build_runner("host")


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Model]:
    """A two-input, two-output model lowered to XNNPACK and to portable kernels."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
        XnnpackPartitioner,
    )
    from executorch.exir import to_edge_transform_and_lower

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = torch.nn.Linear(8, 16)
            self.fc2 = torch.nn.Linear(16, 4)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            h = torch.relu(self.fc1(x))
            return self.fc2(h) * 2.0 + y, h.mean(dim=1)

    torch.manual_seed(0)
    module = Tiny().eval()
    example = (torch.randn(3, 8), torch.randn(3, 4))
    with torch.no_grad():
        expected = [t.numpy() for t in module(*example)]
    out = tmp_path_factory.mktemp("models")
    inputs = out / "inputs.etft"
    write_tensors(inputs, [t.numpy() for t in example])
    result = {}
    for name, partitioner in (("xnnpack", [XnnpackPartitioner()]), ("portable", None)):
        exported = torch.export.export(module, example)
        program = to_edge_transform_and_lower(exported, partitioner=partitioner).to_executorch()
        pte = out / f"tiny_{name}.pte"
        pte.write_bytes(program.buffer)
        result[name] = Model(name, pte, inputs, expected)
    return result


def _run(build: RunnerBuild, *args: str | Path, emulator: tuple[str, ...] = ()) -> procs.CommandResult:
    argv = [*emulator, str(build.runner), *(str(a) for a in args)]
    return procs.run(argv, env=runner_env(str(build.root)), timeout_s=RUN_TIMEOUT_S)


def _result_line(stdout: str) -> dict[str, object]:
    lines = [line for line in stdout.splitlines() if line.startswith("ETFARM_RESULT ")]
    assert len(lines) == 1, stdout
    return json.loads(lines[0].removeprefix("ETFARM_RESULT "))


def _profile(build: RunnerBuild, model: Model, out: Path, emulator: tuple[str, ...] = ()) -> dict[str, object]:
    """Warmup + measured executions with an ETDump; checks outputs and the ETDump."""
    etdump, outputs = out / f"{model.name}.etdp", out / f"{model.name}.out.etft"
    result = _run(build, "--model_path", model.pte, "--warmup", WARMUP, "--num_executions", EXECUTIONS,
                  "--etdump_path", etdump, "--inputs", model.inputs, "--output_file", outputs, emulator=emulator)
    assert result.ok, result.tail()
    summary = _result_line(result.stdout)
    assert summary["method"] == "forward" and summary["warmup"] == WARMUP and summary["executions"] == EXECUTIONS
    assert len(summary["execute_ms"]) == EXECUTIONS and all(ms > 0 for ms in summary["execute_ms"])
    assert summary["load_ms"] > 0 and summary["etdump"] is True
    # the warmups are timed too (the runner's own time outside executions is then measured, not estimated)
    assert len(summary["warmup_ms"]) == WARMUP and all(ms > 0 for ms in summary["warmup_ms"])
    timed = summary["program_load_ms"] + summary["load_ms"] + sum(summary["warmup_ms"]) + sum(summary["execute_ms"])
    assert timed < summary["runner_ms"]
    got = read_tensors(outputs)
    assert len(got) == len(model.expected)
    for actual, expected in zip(got, model.expected, strict=True):
        assert actual.shape == expected.shape and actual.dtype == expected.dtype
        np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)
    assert _method_execute_samples(etdump) == EXECUTIONS, "warmup executions must not be in the ETDump"
    assert _run_data_names(etdump) == ["Default"] + ["Execute"] * EXECUTIONS, "one load block + one per measured run"
    return summary


def _run_data_names(etdump: Path) -> list[str]:
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    return [run.name for run in deserialize_from_etdump_flatcc(etdump.read_bytes()).run_data]


def _method_execute_samples(etdump: Path) -> int:
    from executorch.devtools import Inspector

    inspector = Inspector(etdump_path=str(etdump))
    samples = [len(e.perf_data.raw) for b in inspector.event_blocks for e in b.events
               if e.name == "Method::execute" and e.perf_data is not None]
    assert len(samples) == 1, samples
    return samples[0]


@pytest.mark.parametrize("backend", ["xnnpack", "portable"])
def test_host_runner_matches_eager_and_traces_only_measured_runs(host_build: RunnerBuild, models: dict[str, Model],
                                                                 backend: str, tmp_path: Path) -> None:
    _profile(host_build, models[backend], tmp_path)


def test_host_build_is_self_contained_and_cached(host_build: RunnerBuild) -> None:
    assert host_build.runner.is_file() and (host_build.root / "lib" / "libexecutorch.so").is_file()
    assert set(host_build.stage_files()) >= {"bin/etfarm_runner", "lib/libexecutorch.so", "lib/libexecutorch_etdump.so"}
    again = build_runner("host")
    assert again.cached and again.root == host_build.root


def test_no_event_tracer_without_etdump_path(host_build: RunnerBuild, models: dict[str, Model]) -> None:
    result = _run(host_build, "--model_path", models["xnnpack"].pte, "--num_executions=3", "--cpu_threads=1")
    assert result.ok, result.tail()
    summary = _result_line(result.stdout)
    assert summary["etdump"] is False and summary["warmup"] == 0 and len(summary["execute_ms"]) == 3
    assert summary["cpu_threads"] == 1


def test_intermediate_outputs_land_in_the_debug_buffer(host_build: RunnerBuild, models: dict[str, Model], tmp_path: Path) -> None:
    from executorch.devtools import Inspector

    etdump, debug = tmp_path / "p.etdp", tmp_path / "p.bin"
    result = _run(host_build, "--model_path", models["portable"].pte, "--inputs", models["portable"].inputs,
                  "--etdump_path", etdump, "--dump_intermediate_outputs", "--debug_output_path", debug, "--warmup", 1)
    assert result.ok, result.tail()
    inspector = Inspector(etdump_path=str(etdump), debug_buffer_path=str(debug))
    logged = [e for b in inspector.event_blocks for e in b.events if e.debug_data]
    assert logged, "intermediate outputs must be readable from the debug buffer"


def test_garbage_pte_fails_cleanly(host_build: RunnerBuild, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.pte"
    garbage.write_bytes(os.urandom(4096))
    result = _run(host_build, "--model_path", garbage)
    assert result.exit_code == 1
    assert "cannot load program" in result.stderr and str(garbage) in result.stderr
    assert "ETFARM_RESULT" not in result.stdout


def test_wrong_shape_inputs_fail_cleanly(host_build: RunnerBuild, models: dict[str, Model], tmp_path: Path) -> None:
    bad = tmp_path / "bad.etft"
    write_tensors(bad, [np.ones((3, 9), np.float32), np.ones((3, 4), np.float32)])
    result = _run(host_build, "--model_path", models["xnnpack"].pte, "--inputs", bad)
    assert result.exit_code == 1
    assert "input 0" in result.stderr and "[3, 9]" in result.stderr and "[3, 8]" in result.stderr
    write_tensors(bad, [np.ones((3, 8), np.float32)])
    result = _run(host_build, "--model_path", models["xnnpack"].pte, "--inputs", bad)
    assert result.exit_code == 1 and "holds 1 tensors" in result.stderr


def test_bad_flags_exit_2_with_usage(host_build: RunnerBuild) -> None:
    for args in (("--model_path",), ("--num_executions", "x", "--model_path", "m.pte"), ("--frobnicate",), ()):
        result = _run(host_build, *args)
        assert result.exit_code == 2, args
        assert "usage: etfarm_runner" in result.stderr


def test_linux_aarch64_runner_under_qemu(cache_root: Path, models: dict[str, Model], tmp_path: Path) -> None:
    for tool in ("aarch64-linux-gnu-g++", "cmake"):
        if shutil.which(tool) is None:
            missing(f"{tool} is not installed (run `make testbed`)")
    emulator = board_prefix(BOARDS["rpi5"])  # qemu and the aarch64 sysroot, before the build
    aarch64 = build_runner("linux-aarch64")
    assert all(lib.is_file() for lib in aarch64.libs) and aarch64.libs
    for backend in ("xnnpack", "portable"):
        _profile(aarch64, models[backend], tmp_path, emulator=emulator)


def test_peak_memory_is_what_the_kernel_reports(host_build: RunnerBuild, models: dict[str, Model]) -> None:
    """The runner's peak RSS is VmHWM: read the kernel's figure for the same live process."""
    import re
    import subprocess

    argv = [str(host_build.runner), "--model_path", str(models["xnnpack"].pte), "--num_executions", "20",
            "--inputs", str(models["xnnpack"].inputs), "--hold_ms", "5000"]
    proc = subprocess.Popen(argv, env={**os.environ, **runner_env(str(host_build.root))}, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        # printed before the hold (after the ETFARM_BACKENDS line)
        line = next(out for out in iter(proc.stdout.readline, "") if out.startswith("ETFARM_RESULT "))  # type: ignore[union-attr]
        status = Path(f"/proc/{proc.pid}/status").read_text()
    finally:
        proc.kill()
        proc.wait()
    summary = _result_line(line)
    kernel_kb = int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE).group(1))  # type: ignore[union-attr]
    assert summary["peak_rss_kb"] <= kernel_kb <= summary["peak_rss_kb"] * 1.01 + 64, (summary, kernel_kb)
    assert 0 < summary["peak_rss_load_kb"] <= summary["peak_rss_kb"]
    assert summary["program_bytes"] == models["xnnpack"].pte.stat().st_size


@pytest.mark.parametrize("backend", ["xnnpack", "portable"])
def test_planned_memory_is_the_methods_planned_buffers(host_build: RunnerBuild, models: dict[str, Model], backend: str) -> None:
    """MethodMeta's memory-planned buffer sizes, summed; checked against executorch's own reader of the
    program (non_const_buffer_sizes: entry 0 is reserved, MethodMeta's buffer i is entry i+1)."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(models[backend].pte.read_bytes()).program
    (plan,) = [p for p in program.execution_plan if p.name == "forward"]
    expected = sum(plan.non_const_buffer_sizes[1:])
    result = _run(host_build, "--model_path", models[backend].pte, "--num_executions=1")
    assert result.ok, result.tail()
    assert expected > 0 and _result_line(result.stdout)["planned_memory_bytes"] == expected


def test_calibration_is_timed_before_and_after(host_build: RunnerBuild, models: dict[str, Model]) -> None:
    result = _run(host_build, "--model_path", models["xnnpack"].pte, "--num_executions=2", "--calibration_rounds=20")
    assert result.ok, result.tail()
    summary = _result_line(result.stdout)
    assert summary["calibration_rounds"] == 20
    assert summary["calibration_before_ms"] > 0 and summary["calibration_after_ms"] > 0
    assert summary["runner_ms"] >= summary["calibration_before_ms"] + summary["calibration_after_ms"]
    off = _result_line(_run(host_build, "--model_path", models["xnnpack"].pte).stdout)
    assert "calibration_before_ms" not in off


def test_contention_is_read_per_execution(host_build: RunnerBuild, models: dict[str, Model]) -> None:
    """Every thread's run-queue wait around each measured execution (runners/etfarm_sched.h), the process's CPU
    and wall time around the loop; none with --sched_stats=false. Whether any wait is nonzero is the host's
    business (tests/integration/test_runloop.py makes one that must be)."""
    result = _run(host_build, "--model_path", models["xnnpack"].pte, "--num_executions=4", "--warmup=1")
    assert result.ok, result.tail()
    contention = _result_line(result.stdout)["contention"]
    assert len(contention["wait_ms"]) == 4 and all(w >= 0 for w in contention["wait_ms"])
    assert contention["threads"] >= 1 and contention["cpu_ms"] > 0 and contention["wall_ms"] > 0
    assert contention["involuntary_switches"] >= 0 and contention["migrations"] >= 0 and contention["read_ms"] >= 0
    off = _run(host_build, "--model_path", models["xnnpack"].pte, "--sched_stats=false")
    assert off.ok and "contention" not in _result_line(off.stdout)
