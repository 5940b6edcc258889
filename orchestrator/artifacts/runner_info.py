"""Which ExecuTorch runtime a runner build is and how a device starts it.

`RuntimeInfo` is what a job records of the runner a device ran (the manifest's
`devices.NAME.facts.runner`, device.json, the results store) and what a farm task carries beside
the runner's files, so the worker starts it as the client built it (a bundled-glibc runner needs
its loader: `launcher`). Runtimes (artifacts/build.py): `wheel` (host, linux-aarch64: the executorch
wheel's runtime), `bundled-glibc` (android-arm64-v8a without ANDROID_NDK), `ndk` (ANDROID_NDK +
EXECUTORCH_SRC), `user` (an inventory's `runtime: PATH` or `etfarm build --runtime PATH`).

A job builds one runner per `runner_slot`: the target, and the user's runtime prefix when the
device names one, so two devices of one target with different runtimes never share a runner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from device_agents.facts import RunnerFacts

RUNTIME_WHEEL, RUNTIME_BUNDLED_GLIBC, RUNTIME_NDK, RUNTIME_USER = "wheel", "bundled-glibc", "ndk", "user"


@dataclass(frozen=True)
class RuntimeInfo:
    """The runtime of a runner build, how it starts, what it registers."""

    runtime: str = RUNTIME_WHEEL  # wheel | bundled-glibc | ndk | user
    # argv words that start the runner, before it; workdir-relative where they begin with "./"
    # (bundled-glibc: "./lib/ld-linux-aarch64.so.1", "--library-path", "./lib"). Empty: run it directly.
    launcher: tuple[str, ...] = ()
    bundled: tuple[str, ...] = ()  # glibc files in lib/ (bundled-glibc), by name
    executorch_dir: str = ""  # the executorch_DIR the runner was built against
    backends: tuple[str, ...] = ()  # what the runner registers (read from it at build time, when it runs there)

    def facts(self, backends: Sequence[str] | None = None) -> RunnerFacts:
        """As a device's facts record it (`facts.runner`); `backends`: what the runner said it registers on
        the device (its result line), which wins over what the build found (an NDK build cannot run here)."""
        return RunnerFacts(self.runtime, self.executorch_dir, self.launcher, self.bundled,
                           tuple(str(name) for name in backends) if backends else self.backends)


def runner_slot(target: str, runtime: str | None = None) -> str:
    """The name of the runner a device of `target` runs: the target, with the user's runtime prefix if any."""
    return f"{target} (runtime {runtime})" if runtime else target
