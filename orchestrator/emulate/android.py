"""An emulated Android phone: the test device daemon serving a chroot that looks like a Pixel 8.

The real adb server attaches to it as to any network device. Its shell is Android's (mksh and
toybox's commands only), its root has no glibc, and it runs aarch64 programs under qemu-user,
so a runner that needs anything the phone lacks fails here as on a phone. See android_root.py
for the tree.

How qemu starts them: where the kernel gives each user namespace its own binfmt_misc (Linux >= 6.7),
the daemon runs in a user and mount namespace of its own and registers the static qemu-aarch64
there (adb_daemon.py --binfmt): the phone's shell execs an aarch64 program as a phone does, etfarm
starts the runner exactly as on a phone (no exec_prefix), and nothing outside the daemon's
namespace changes. On older kernels the spec's `exec_prefix` is `qemu-aarch64` (static, in
/system/bin) instead (`AndroidPhone.exec_prefix` says which).

The daemon runs in its own mount namespace (`unshare --mount`, with `--user --map-root-user` when
not root or for binfmt_misc), where it bind-mounts /proc and /dev into the root; the host never sees them.
"""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from device_agents.base import DeviceSpec

from . import missing, require_tool
from .adbserver import AdbTestDevice, AdbTestServer, start_adb_device
from .android_root import (
    PIXEL8_CLUSTERS,
    PIXEL8_PROPS,
    QEMU_STATIC,
    WORKDIR,
    Cluster,
    build_root,
    missing_tools,
    set_props,
)

ANDROID_TARGET = "android-arm64-v8a"
EXEC_PREFIX = ("qemu-aarch64",)  # /system/bin/qemu-aarch64 on the phone's PATH
# qemu's CPU for the phone's aarch64 programs: qemu-user 7.2 has no Tensor G3 core, so the nearest it has. Never qemu's
# default `max`: XNNPACK picks its SVE/SME kernels there, which qemu runs ten times slower (2 s a tiny_cnn execute
# against 0.2 s) and whose int8 kernels compute wrongly.
PIXEL8_CPU = "cortex-a76"


@dataclass
class AndroidPhone:
    """An emulated phone attached to the test adb server; `root` is its `/` on this host."""

    device: AdbTestDevice
    exec_prefix: tuple[str, ...] = EXEC_PREFIX  # () when qemu is registered with the phone's own binfmt_misc
    cpu: str = PIXEL8_CPU  # qemu -cpu for its aarch64 programs

    @property
    def root(self) -> Path:
        return self.device.root

    @property
    def serial(self) -> str:
        return self.device.serial

    @property
    def binfmt(self) -> bool:
        """aarch64 programs start as on a phone (qemu registered in the phone's own binfmt_misc)."""
        return not self.exec_prefix

    @property
    def runner_prefix(self) -> tuple[str, ...]:
        """How the phone's runner starts under qemu with the phone's `cpu`: through qemu's own -cpu, or, where the
        phone's binfmt_misc starts qemu, its QEMU_CPU variable set by the phone's toybox env."""
        return (*self.exec_prefix, "-cpu", self.cpu) if self.exec_prefix else ("env", f"QEMU_CPU={self.cpu}")

    def spec(self, name: str = "pixel8emu", workdir: str = WORKDIR, *, exec_prefix: tuple[str, ...] | None = None,
             **settings: Any) -> DeviceSpec:
        """A DeviceSpec for the phone: target android-arm64-v8a, workdir /data/local/tmp/etfarm, runner under qemu
        with the phone's CPU (`runner_prefix` unless given: `exec_prefix=()` for a step whose "runner" is a shell
        command)."""
        prefix = self.runner_prefix if exec_prefix is None else exec_prefix
        return self.device.spec(name, workdir, target=ANDROID_TARGET, exec_prefix=prefix, **settings)

    def host_path(self, device_path: str) -> Path:
        """Where a file of the phone lives on this host."""
        return self.root / device_path.lstrip("/")

    def set_props(self, props: dict[str, str]) -> None:
        """Change what getprop answers (e.g. another ro.product.cpu.abi); the rest stays a Pixel 8."""
        set_props(self.root, {**PIXEL8_PROPS, **props})

    def set_dumpsys(self, service: str, text: str) -> None:
        (self.root / "system" / "etfarm-dumpsys" / service).write_text(text)

    def perf_mode(self) -> str | None:
        """What `cmd power set-fixed-performance-mode-enabled` was last told (None: never)."""
        path = self.root / "data" / "etfarm-testbed" / "perf_mode"
        return path.read_text().strip() if path.is_file() else None

    def kill(self) -> None:
        self.device.kill()

    def restart(self) -> None:
        self.device.restart()

    def stop(self) -> None:
        self.device.stop()


@functools.cache
def _namespace_wrapper(own_user_namespace: bool) -> tuple[str, ...]:
    unshare = require_tool("unshare")
    require_tool("chroot")
    words = (unshare, "--mount", "--propagation", "private")
    if own_user_namespace or os.geteuid() != 0:
        words = (unshare, "--user", "--map-root-user", "--mount", "--propagation", "private")
    probe = subprocess.run([*words, "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        missing(f"the emulated phone needs a mount namespace (`{' '.join(words)}` failed: {probe.stderr.strip()})")
    return words


@functools.cache
def binfmt_available() -> bool:
    """Whether a user namespace gets its own binfmt_misc here (Linux >= 6.7): mounting it there succeeds."""
    words = _namespace_wrapper(True)
    probe = subprocess.run([*words, "sh", "-c", 'd=$(mktemp -d) && mount -t binfmt_misc binfmt_misc "$d" && '
                            'test -e "$d/register"; r=$?; umount "$d" 2>/dev/null; rmdir "$d"; exit $r'],
                           capture_output=True, text=True, timeout=30)
    return probe.returncode == 0


def start_android_phone(server: AdbTestServer, root: Path, clusters: tuple[Cluster, ...] = PIXEL8_CLUSTERS,
                        binfmt: bool = True) -> AndroidPhone:
    """Lay out the phone's root in `root` (empty), start its daemon and attach it to `server`.

    `clusters`: the cpufreq layout in its sysfs (Pixel 8's 4+4+1 by default; a test that pins with
    taskset needs cpu numbers this host has). `binfmt`: register qemu in the phone's own binfmt_misc
    where the kernel allows it (else, or with False, the runner starts through `exec_prefix`)."""
    absent = missing_tools()
    if absent:
        missing(f"the emulated phone needs the Debian packages {', '.join(absent)} (run `make testbed`)")
    binfmt = binfmt and binfmt_available()
    wrapper = _namespace_wrapper(binfmt)
    build_root(root, clusters=clusters)
    args = ("--chroot", "--binfmt", QEMU_STATIC) if binfmt else ("--chroot",)
    device = start_adb_device(server, root, wrapper=wrapper, daemon_args=args)
    return AndroidPhone(device, () if binfmt else EXEC_PREFIX)
