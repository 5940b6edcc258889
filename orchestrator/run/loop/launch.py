"""How the staged runner starts on a device, settled once per session before anything is pushed.

- The runner build's own start: a bundled-glibc runner (Android without an NDK) is started through
  its loader (`RunnerBuild.launcher`: `./lib/ld-linux-aarch64.so.1 --library-path ./lib`), any
  other with `LD_LIBRARY_PATH` pointing at its libraries (`RunnerBuild.start_words`/`env`).
- The ABI check: an Android device whose `ro.product.cpu.abi` runs another target than the
  inventory's (or none of etfarm's: a 32-bit phone) is refused in one line, before staging.
- The affinity: `cpus:` as a list pins the runner with `taskset MASK` (run/device/controls.py); `big` or
  `prime` are resolved from the device's clusters first (run/device/affinity.py).

The ABI check and a named cluster cost one describe of the device; other devices pay nothing here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from device_agents.base import DeviceAgent, DeviceSpec
from device_agents.facts import DeviceFacts
from orchestrator.artifacts.build import RunnerBuild
from orchestrator.artifacts.runner_info import RuntimeInfo
from orchestrator.artifacts.targets import ANDROID_ABI_TARGETS, target_for_abi
from orchestrator.base.errors import Blame, DeviceRefused
from orchestrator.run.device import affinity
from orchestrator.run.device.controls import affinity_prefix

ABI_FACT = "ro.product.cpu.abi"


class DeviceMismatch(DeviceRefused):
    """The device is not what the inventory says it is (its ABI, its clusters): the user's to fix."""

    blame = Blame.USAGE


@dataclass(frozen=True)
class Launch:
    """The runner's start on one device: launcher + runner words, environment, affinity prefix."""

    words: tuple[str, ...]  # absolute device paths: the launcher's words, then the runner
    env: Mapping[str, str] = field(default_factory=dict)
    prefix: tuple[str, ...] = ()  # before the device's exec_prefix: `taskset MASK`
    info: RuntimeInfo = field(default_factory=RuntimeInfo)  # what facts.runner records
    controls: Mapping[str, Any] = field(default_factory=dict)  # what the device record's `controls` gets

    @classmethod
    def of(cls, build: RunnerBuild, workdir: str, cpus: str | None = None,
           controls: Mapping[str, Any] | None = None) -> Launch:
        return cls(tuple(build.start_words(workdir)), build.env(workdir), affinity_prefix(cpus), build.info,
                   dict(controls or {}))

    @property
    def runner(self) -> str:
        return self.words[-1]

    @property
    def launcher(self) -> tuple[str, ...]:
        return self.words[:-1]


def prepare_launch(agent: DeviceAgent, spec: DeviceSpec, build: RunnerBuild, say: Callable[[str], None]) -> Launch:
    """Check the device (ABI) and resolve `cpus:`, then how the runner starts there; DeviceMismatch when the
    device cannot run this job's runner or has no clusters to pin to."""
    named = spec.cpus in (affinity.BIG, affinity.PRIME)
    if not (spec.android or named):
        return Launch.of(build, spec.workdir, spec.cpus)
    facts = agent.describe()
    if spec.android:
        check_abi(spec, facts)
    if not named:
        return Launch.of(build, spec.workdir, spec.cpus)
    assert spec.cpus is not None
    try:
        chosen = affinity.resolve(spec.cpus, facts)
    except affinity.NoClusters as exc:
        raise DeviceMismatch(spec.name, f"cpus: {spec.cpus}: {exc}; give a cpu list instead (in {spec.source})") from None
    say(f"cpus {spec.cpus}: {chosen.describe()}")
    return Launch.of(build, spec.workdir, chosen.cpus, {"cpus": chosen.describe()})


def check_abi(spec: DeviceSpec, facts: DeviceFacts) -> None:
    """Refuse an Android device whose ABI does not run `spec.target` (an unknown ABI is let through)."""
    abi = facts.android.abi if facts.android is not None else None
    if not abi:
        return
    target = target_for_abi(str(abi))
    if target is None:
        raise DeviceMismatch(spec.name, f"the device's ABI is {abi} ({ABI_FACT}): no etfarm runner runs there "
                                        f"({', '.join(ANDROID_ABI_TARGETS)} only); nothing was pushed")
    if target != spec.target:
        raise DeviceMismatch(spec.name, f"the device's ABI is {abi} ({ABI_FACT}), which runs target {target}, not "
                                        f"{spec.target} as {spec.source} says; nothing was pushed")
