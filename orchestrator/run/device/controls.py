"""Device controls for a job: CPU affinity for the runner, Android's fixed performance mode.

- `cpus:` in the inventory (e.g. `"4-7"` or `"2"`, checked by config.py; `big` / `prime` resolved from the device's
  clusters first, run/loop/launch.py) pins the runner with `taskset MASK` (the hex mask of those cpus), before the
  device's `exec_prefix`: Android's toybox taskset takes a mask only (no `-c LIST`), and so do util-linux's and
  busybox's, so the one form works on Linux boards and phones alike.
- On Android, fixed performance mode (`cmd power set-fixed-performance-mode-enabled true`) is
  switched on for the job and off again after it, where the platform offers it (Android 11+,
  a debuggable build); where it does not, the job runs anyway and records that it was unavailable.

Commands are fixed strings or quoted words: nothing from the inventory reaches a shell unquoted.
"""

from __future__ import annotations

from device_agents.base import DeviceSpec

PERF_MODE_FACT = "fixed_performance_mode"


def affinity_prefix(cpus: str | None) -> tuple[str, ...]:
    """The words that pin the runner to `cpus` (a list: "4-7", "0,2"), or none: `taskset MASK`."""
    return ("taskset", cpu_mask(cpus)) if cpus else ()


def cpu_mask(cpus: str) -> str:
    """taskset's hex mask of a cpu list: "4-7" -> "f0", "0,2" -> "5"."""
    mask = 0
    for part in cpus.split(","):
        low, _, high = part.partition("-")
        for cpu in range(int(low), int(high or low) + 1):
            mask |= 1 << cpu
    return f"{mask:x}"


def _perf_mode(enabled: bool) -> list[str]:
    state = "true" if enabled else "false"
    script = (f"if command -v cmd >/dev/null 2>&1 && cmd power set-fixed-performance-mode-enabled {state} "
              f">/dev/null 2>&1; then echo {PERF_MODE_FACT}={'on' if enabled else 'off'}; "
              f"else echo {PERF_MODE_FACT}=unavailable; fi")
    return ["sh", "-c", script]


def setup_commands(spec: DeviceSpec) -> list[list[str]]:
    """Commands to run once before the job's process runs (each prints `key=value` facts)."""
    return [_perf_mode(True)] if spec.android else []


def restore_commands(spec: DeviceSpec) -> list[list[str]]:
    """Commands that undo `setup_commands`, run after the job even when it failed."""
    return [_perf_mode(False)] if spec.android else []
