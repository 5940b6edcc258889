"""An emulated device's own machine: describe.sh runs on the host that emulates it, so its `uname -m` is the host's.

qemu-user answers the uname syscall with the machine it emulates, so a program of the target run through
the device's exec_prefix reads the device's machine: the target's dynamic loader is such a program on
every glibc system, and `--list-diagnostics` (glibc 2.35+) prints `uname.machine="aarch64"`. Where that
cannot be read (no loader there, an older glibc) and the host's answer is not the target's machine, it stays,
marked as the host's, so no page shows the host's machine as the device's.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from device_agents.base import DeviceAgent
    from device_agents.facts import DeviceFacts

# The machine (`uname -m`) each etfarm target runs on, and its dynamic loader where it is a glibc system's (a
# program of the target that any such system holds).
MACHINES = {"linux-aarch64": "aarch64", "android-arm64-v8a": "aarch64"}
LOADERS = {"linux-aarch64": "/lib/ld-linux-aarch64.so.1"}
MACHINE = re.compile(r'^uname\.machine="([A-Za-z0-9_.-]{1,32})"$', re.MULTILINE)
HOST_MARK = " (host's: emulated)"
READ_TIMEOUT_SEC = 20.0


def loader_path(exec_prefix: tuple[str, ...], target: str) -> str | None:
    """The target's loader as the prefix finds it: below qemu's `-L` sysroot when the prefix names one
    (qemu-user looks up the program itself outside it), else at its own path; None for a target without one."""
    loader = LOADERS.get(target)
    if loader is None:
        return None
    words = list(exec_prefix)
    sysroot = next((words[i + 1] for i, word in enumerate(words[:-1]) if word == "-L"), None)
    return posixpath.join(sysroot, loader.lstrip("/")) if sysroot else loader


def read_machine(agent: DeviceAgent) -> str | None:
    """The machine the device's exec_prefix emulates (`uname -m` as its programs see it); None when unreadable."""
    spec = agent.spec
    loader = loader_path(spec.exec_prefix, spec.target) if spec.exec_prefix else None
    if loader is None:
        return None
    result = agent.run([loader, "--list-diagnostics"], use_exec_prefix=True, timeout_s=READ_TIMEOUT_SEC)
    found = MACHINE.search(result.stdout) if result.ok else None
    return found.group(1) if found else None


def emulated_facts(agent: DeviceAgent, facts: DeviceFacts) -> DeviceFacts:
    """The facts of an emulated device with its own machine as `abi`, or the host's marked as the host's. A device
    whose own uname already says its target's machine (the emulated phone's busybox uname) is not asked again."""
    if not agent.spec.emulated or facts.abi is None or facts.abi == MACHINES.get(agent.spec.target):
        return facts  # not emulated, no abi among these facts (a warm run's), or the device's own already
    machine = read_machine(agent)
    if machine is not None:
        return replace(facts, abi=machine)
    if str(facts.abi).endswith(HOST_MARK):
        return facts
    return replace(facts, abi=f"{facts.abi}{HOST_MARK}")
