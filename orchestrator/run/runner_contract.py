"""The runner's command-line contract: its flags, the files it writes, the result line it prints.

One home for what `runners/etfarm_runner.cpp` and the host agree on (README "The runner").
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.artifacts.build import RUNNER_REL

__all__ = ["RUNNER_REL", "RunnerInvocation", "parse_result", "execute_samples"]

ETDUMP_NAME = "etdump.etdp"
OUTPUTS_NAME = "outputs.etft"
DEBUG_NAME = "debug_output.bin"
RUNNER_LOG = "runner.log"
RESULT_JSON = "result.json"
DEVICE_STATE_JSON = "device_state.json"
RESULT_PREFIX = "ETFARM_RESULT "
# Rounds of the runner's calibration workload (64x64 GEMM + 2 MiB of copies each): about 15 ms
# on the 2-vCPU Xeon testbed, long enough for a busy loop sharing the core to show (the
# scheduler's slices are a few ms), short enough to cost little per process run.
CALIBRATION_ROUNDS = 250


@dataclass(frozen=True)
class RunnerInvocation:
    """What one process run asks of the runner; paths are absolute device paths."""

    runner: str
    model: str
    inputs: str | None
    out_dir: str
    iterations: int
    warmup: int
    traced: bool
    cpu_threads: int = 0
    intermediate_outputs: bool = False
    debug_buffer_size: int = 16 << 20
    calibration_rounds: int = CALIBRATION_ROUNDS

    def argv(self) -> list[str]:
        argv = [self.runner, f"--model_path={self.model}", f"--num_executions={self.iterations}", f"--warmup={self.warmup}"]
        if self.traced:  # untraced runs attach no event tracer at all: that is their point
            argv += [f"--etdump_path={posixpath.join(self.out_dir, ETDUMP_NAME)}",
                     f"--output_file={posixpath.join(self.out_dir, OUTPUTS_NAME)}"]
        if self.inputs:
            argv.append(f"--inputs={self.inputs}")
        if self.cpu_threads > 0:
            argv.append(f"--cpu_threads={self.cpu_threads}")
        if self.calibration_rounds > 0:
            argv.append(f"--calibration_rounds={self.calibration_rounds}")
        if self.traced and self.intermediate_outputs:
            argv += ["--dump_intermediate_outputs", f"--debug_buffer_size={self.debug_buffer_size}",
                     f"--debug_output_path={posixpath.join(self.out_dir, DEBUG_NAME)}"]
        return argv

    def expected_files(self) -> list[str]:
        """Files the runner was told to write: a missing one is a failure, never a skip."""
        if not self.traced:
            return []
        return [ETDUMP_NAME, OUTPUTS_NAME, *([DEBUG_NAME] if self.intermediate_outputs else [])]


def parse_result(stdout: str) -> dict[str, Any]:
    """The runner's last `ETFARM_RESULT {json}` line; {} when it printed none (or a broken one)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                value = json.loads(line[len(RESULT_PREFIX):])
            except json.JSONDecodeError:
                break
            return value if isinstance(value, dict) else {}
    return {}


def execute_samples(result: dict[str, Any]) -> tuple[float, ...]:
    values: Sequence[Any] = result.get("execute_ms") or ()
    return tuple(float(v) for v in values)
