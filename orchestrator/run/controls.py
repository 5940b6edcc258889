"""Device controls for a job: CPU affinity for the runner, Android's fixed performance mode.

- `cpus:` in the inventory (e.g. `"4-7"` or `"2"`, checked by config.py) pins the runner with `taskset -c`, on Linux
  boards and Android (toybox has taskset) alike; it goes before the device's `exec_prefix`.
- On Android, fixed performance mode (`cmd power set-fixed-performance-mode-enabled true`) is
  switched on for the job and off again after it, where the platform offers it (Android 11+,
  a debuggable build); where it does not, the job runs anyway and records that it was unavailable.

Commands are fixed strings or quoted words: nothing from the inventory reaches a shell unquoted.
"""

from __future__ import annotations

from device_agents.base import DeviceSpec

PERF_MODE_FACT = "fixed_performance_mode"


def affinity_prefix(spec: DeviceSpec) -> tuple[str, ...]:
    """The words that pin the runner to the device's `cpus:`, or none."""
    return ("taskset", "-c", spec.cpus) if spec.cpus else ()


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
