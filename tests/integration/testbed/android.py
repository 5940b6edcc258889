"""An emulated Android phone: the test device daemon serving a chroot that looks like a Pixel 8.

The real adb server attaches to it as to any network device. Its shell is Android's (mksh and
toybox's commands only), its root has no glibc, and it runs aarch64 programs under qemu-user:
the spec's `exec_prefix` is `qemu-aarch64` (static, in /system/bin), so a runner that needs
anything the phone lacks fails here as on a phone. See android_root.py for the tree.

qemu runs through `exec_prefix`, not binfmt_misc: registering a binfmt handler changes how
every process on the machine execs aarch64 files (and needs binfmt_misc mounted, which this
testbed's hosts do not have); an exec_prefix touches nothing outside the test.

The daemon runs in its own mount namespace (`unshare --mount`; with `--user --map-root-user`
when not root), where it bind-mounts /proc and /dev into the root; the host never sees them.
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
from .android_root import PIXEL8_CLUSTERS, PIXEL8_PROPS, WORKDIR, Cluster, build_root, missing_tools, set_props

ANDROID_TARGET = "android-arm64-v8a"
EXEC_PREFIX = ("qemu-aarch64",)  # /system/bin/qemu-aarch64 on the phone's PATH


@dataclass
class AndroidPhone:
    """An emulated phone attached to the test adb server; `root` is its `/` on this host."""

    device: AdbTestDevice

    @property
    def root(self) -> Path:
        return self.device.root

    @property
    def serial(self) -> str:
        return self.device.serial

    def spec(self, name: str = "pixel8emu", workdir: str = WORKDIR, *, exec_prefix: tuple[str, ...] = EXEC_PREFIX,
             **settings: Any) -> DeviceSpec:
        """A DeviceSpec for the phone: target android-arm64-v8a, workdir /data/local/tmp/etfarm, runner under qemu
        (`exec_prefix=()` for a step whose "runner" is a shell command of the phone)."""
        return self.device.spec(name, workdir, target=ANDROID_TARGET, exec_prefix=exec_prefix, **settings)

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
def _namespace_wrapper() -> tuple[str, ...]:
    unshare = require_tool("unshare")
    require_tool("chroot")
    words = (unshare, "--mount", "--propagation", "private")
    if os.geteuid() != 0:
        words = (unshare, "--user", "--map-root-user", "--mount", "--propagation", "private")
    probe = subprocess.run([*words, "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        missing(f"the emulated phone needs a mount namespace (`{' '.join(words)}` failed: {probe.stderr.strip()})")
    return words


def start_android_phone(server: AdbTestServer, root: Path, clusters: tuple[Cluster, ...] = PIXEL8_CLUSTERS) -> AndroidPhone:
    """Lay out the phone's root in `root` (empty), start its daemon and attach it to `server`.

    `clusters`: the cpufreq layout in its sysfs (Pixel 8's 4+4+1 by default; a test that pins with
    taskset needs cpu numbers this host has)."""
    absent = missing_tools()
    if absent:
        missing(f"the emulated phone needs the Debian packages {', '.join(absent)} (run `make testbed`)")
    wrapper = _namespace_wrapper()
    build_root(root, clusters=clusters)
    return AndroidPhone(start_adb_device(server, root, wrapper=wrapper, daemon_args=("--chroot",)))
