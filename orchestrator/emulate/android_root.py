"""The root filesystem of the emulated Android phone: what its `adb shell` sees as `/`.

The device daemon (adb_daemon.py --chroot ROOT) runs every shell command as
`chroot ROOT /system/bin/sh -c CMD` inside its own mount namespace, so the phone's
commands see this tree and nothing of the host:

    /system/bin/sh            mksh (Debian's static build), Android's shell
    /system/bin/<command>     toybox, Android's own command-line tools (Debian's build), only the
                              commands Android ships: no bash, no GNU-only options, no /usr/bin/env;
                              the few Debian's toybox lacks (awk, tr, dd, expr, diff, ...) from busybox
    /system/lib64             the x86_64 glibc toybox needs (it is patched to load from here,
                              as Android's tools load bionic from /system/lib64)
    /system/bin/getprop       the properties below (Pixel 8, Android 14, arm64-v8a)
    /system/bin/dumpsys       `battery` and `thermalservice` from files the test may rewrite; `powerstats`
                              from emulated rails (powerstats.py)
    /system/bin/cmd           `power set-fixed-performance-mode-enabled` (recorded, as on a debuggable build)
    /system/bin/uname         busybox's, saying aarch64 for the machine
    /system/bin/timeout       toybox's, with the command started 50 ms late: Debian's toybox 0.8.9 otherwise
                              returns 127 for about half of the commands that exit at once (a race in it)
    /system/bin/qemu-aarch64  qemu-user, statically linked: the phone's CPU (the spec's exec_prefix)
    /sys/...                  cpufreq per cluster, cpu_capacity, topology, thermal zones, battery
    /data/local/tmp           adb's workdir; /proc and /dev bind-mounted from the host
    /etc -> /system/etc       passwd and group for root and shell (bionic has them built in)
    no /lib, /lib64, /usr, /bin, /tmp: no glibc for an aarch64 program to fall back on

The sysfs tree is plain files read at the paths a phone has, so the device scripts read them
exactly as on a phone: nothing in describe.sh knows it is emulated.

Why toybox first: Debian's static busybox runs its own applet for any command named like one
(busybox `timeout 5 sh -c ...` would start busybox's ash, not mksh); toybox has no `sh`, as on
Android, so `timeout`, `env` and `taskset` start /system/bin/sh like a phone's do. busybox only
fills in commands that start nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import powerstats

# Android 14's toybox commands (and the few others /system/bin has: awk, sh); the emulated phone
# gets those that Debian's toybox also has, so a device script using anything else fails here as on a phone.
_ANDROID_COMMANDS = """
[ acpi awk base64 basename blkdiscard blkid blockdev brctl cal cat chattr chcon chgrp chmod chown chroot chrt
cksum clear cmp comm cp cpio cut date dd devmem df diff dirname dmesg dos2unix du echo egrep env expand expr
fallocate false fgrep file find flock fmt free freeramdisk fsfreeze fsync getconf getenforce getfattr getopt
grep groups gunzip gzip head hostname hwclock i2cdetect i2cdump i2cget i2cset i2ctransfer iconv id ifconfig
inotifyd insmod install ionice iorenice iotop kill killall ln load_policy log logname losetup ls lsattr lsmod
lsof lspci lsusb makedevs md5sum microcom mkdir mkfifo mknod mkswap mktemp modinfo modprobe more mount
mountpoint mv nbd-client nc netcat netstat nice nl nohup nproc nsenter od partprobe paste patch pgrep pidof
ping ping6 pivot_root pkill pmap printenv printf prlimit ps pwd pwdx readelf readlink realpath renice
restorecon rev rfkill rm rmdir rmmod rtcwake runcon sed sendevent seq setenforce setfattr setsid sha1sum
sha224sum sha256sum sha384sum sha512sum sleep sort split stat strings stty swapoff swapon sync sysctl tac tail
tar taskset tee test time timeout top touch tr traceroute traceroute6 true truncate tty tunctl uclampset
ulimit umount uname uniq unix2dos unlink unshare uptime usleep uudecode uuencode uuidgen vconfig vi vmstat
watch wc which whoami xargs xxd yes zcat
"""
ANDROID_COMMANDS = frozenset(_ANDROID_COMMANDS.split())
# busybox applets that start other programs (they would start busybox's own ash for `sh`): never used.
_BUSYBOX_STARTS = "chroot env flock ionice nice nohup nsenter setsid taskset time timeout unshare watch xargs"
BUSYBOX_STARTS = frozenset(_BUSYBOX_STARTS.split())
MKSH = "/usr/lib/klibc/bin/mksh"  # Debian mksh's static build (/bin/mksh-static points here)
TOYBOX = "/bin/toybox"  # Debian toybox
BUSYBOX = "/bin/busybox"  # Debian busybox-static
PATCHELF = "/usr/bin/patchelf"
QEMU_STATIC = "/usr/bin/qemu-aarch64-static"  # Debian qemu-user-static
TOOLS = {MKSH: "mksh", TOYBOX: "toybox", BUSYBOX: "busybox-static", PATCHELF: "patchelf", QEMU_STATIC: "qemu-user-static"}
LIB64 = "/system/lib64"
WORKDIR = "/data/local/tmp/etfarm"

PIXEL8_PROPS = {
    "ro.product.model": "Pixel 8",
    "ro.product.manufacturer": "Google",
    "ro.product.name": "shiba",
    "ro.product.device": "shiba",
    "ro.soc.manufacturer": "Google",
    "ro.soc.model": "Tensor G3",
    "ro.build.version.release": "14",
    "ro.build.version.sdk": "34",
    "ro.product.cpu.abi": "arm64-v8a",
    "ro.product.cpu.abilist": "arm64-v8a",
    "ro.build.type": "userdebug",
}


@dataclass(frozen=True)
class Cluster:
    cpus: tuple[int, ...]
    max_khz: int
    capacity: int
    governor: str = "sched_pixel"


# Tensor G3: 4 x Cortex-A510, 4 x Cortex-A715, 1 x Cortex-X3.
PIXEL8_CLUSTERS = (Cluster((0, 1, 2, 3), 1704000, 250), Cluster((4, 5, 6, 7), 2367000, 620), Cluster((8,), 2910000, 1024))
THERMAL_ZONES = (("BIG", 45200), ("MID", 41800), ("LITTLE", 38900), ("battery", 29400), ("VIRTUAL-SKIN", 32500))

BATTERY = """Current Battery Service state:
  AC powered: false
  USB powered: true
  Wireless powered: false
  Dock powered: false
  Max charging current: 500000
  Max charging voltage: 5000000
  Charge counter: 3853000
  status: 2
  health: 2
  present: true
  level: 85
  scale: 100
  voltage: 4213
  temperature: 294
  technology: Li-ion
"""
THERMALSERVICE = """IsStatusOverride: false
ThermalEventListeners:
\tcallbacks: 1
Thermal Status: 0
Cached temperatures:
\tTemperature{mValue=32.5, mType=3, mName=VIRTUAL-SKIN, mStatus=0}
HAL Ready: true
HAL connection:
\tThermalHAL 2.0 connected: yes
Current temperatures from HAL:
\tTemperature{mValue=45.2, mType=0, mName=BIG, mStatus=0}
\tTemperature{mValue=41.8, mType=0, mName=MID, mStatus=0}
\tTemperature{mValue=38.9, mType=0, mName=LITTLE, mStatus=0}
\tTemperature{mValue=29.4, mType=2, mName=battery, mStatus=0}
\tTemperature{mValue=32.5, mType=3, mName=VIRTUAL-SKIN, mStatus=0}
Current cooling devices from HAL:
\tCoolingDevice{mValue=0, mType=2, mName=thermal-cpufreq-0}
"""

GETPROP = """#!/system/bin/sh
# getprop [NAME]: the emulated phone's properties (one NAME=VALUE a line in /system/etfarm.prop).
if [ $# -eq 0 ]; then
  while IFS='=' read -r k v; do echo "[$k]: [$v]"; done </system/etfarm.prop
  exit 0
fi
while IFS='=' read -r k v; do
  if [ "$k" = "$1" ]; then echo "$v"; exit 0; fi
done </system/etfarm.prop
echo "$2"
"""
DUMPSYS = """#!/system/bin/sh
# dumpsys SERVICE: canned answers from /system/etfarm-dumpsys/SERVICE (the test may rewrite them).
[ "$1" = powerstats ] && [ ! -r /system/etfarm-dumpsys/powerstats ] && exec /system/bin/etfarm-powerstats  # powerstats.py
if [ -r "/system/etfarm-dumpsys/$1" ]; then cat "/system/etfarm-dumpsys/$1"; exit 0; fi
echo "Can't find service: $1"
exit 0
"""
UNAME = """#!/system/bin/sh
# The phone's CPU is aarch64 (qemu runs its programs); the kernel is the host's.
toybox uname "$@" | sed 's/x86_64/aarch64/g'
"""
CMD = """#!/system/bin/sh
# cmd power set-fixed-performance-mode-enabled true|false: recorded in /data/etfarm-testbed/perf_mode.
if [ "$1" = power ] && [ "$2" = set-fixed-performance-mode-enabled ]; then
  case $3 in true|false) echo "$3" >/data/etfarm-testbed/perf_mode; exit 0 ;; esac
fi
echo "cmd: unsupported in the emulated phone: $*" >&2
exit 255
"""


TIMEOUT = """#!/system/bin/sh
# toybox's timeout, unchanged but for one thing: Debian's toybox 0.8.9 returns 127 for about half of the
# commands that exit at once (its SIGCHLD handler races the child's own setup), so the command waits 50 ms
# before it starts, which the race never meets. Options, exit codes (124, 137), the command in a process group
# of its own and the signals it does not pass on are toybox's (tests/integration/test_android.py).
opts=''
while [ $# -gt 0 ]; do
  case $1 in
    -k|-s) opts="$opts $1 $2"; shift 2 ;;
    -?*) opts="$opts $1"; shift ;;
    *) break ;;
  esac
done
[ $# -gt 1 ] || exec toybox timeout $opts "$@"
duration=$1
shift
exec toybox timeout $opts "$duration" sh -c 'sleep 0.05; exec "$@"' timeout "$@"
"""


def missing_tools() -> list[str]:
    """Debian packages the emulated phone needs that are not installed (scripts/install-testbed.sh has them)."""
    return [package for path, package in TOOLS.items() if not os.path.isfile(path)]


def build_root(root: Path, props: dict[str, str] | None = None, clusters: tuple[Cluster, ...] = PIXEL8_CLUSTERS) -> None:
    """Lay out the phone's `/` in `root` (see the module docstring)."""
    bin_dir = root / "system" / "bin"
    bin_dir.mkdir(parents=True)
    _place(MKSH, bin_dir / "sh")
    _place(QEMU_STATIC, bin_dir / "qemu-aarch64")
    _install_toybox(root)
    for name, text in (("getprop", GETPROP), ("dumpsys", DUMPSYS), ("cmd", CMD), ("uname", UNAME), ("timeout", TIMEOUT)):
        (bin_dir / name).unlink(missing_ok=True)
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    set_props(root, {**PIXEL8_PROPS, **(props or {})})
    powerstats.install(root)  # emulated power rails (powerstats.py)
    dumpsys = root / "system" / "etfarm-dumpsys"
    dumpsys.mkdir()
    (dumpsys / "battery").write_text(BATTERY)
    (dumpsys / "thermalservice").write_text(THERMALSERVICE)
    for rel in ("data/local/tmp", "data/etfarm-testbed", "dev", "proc", "system/etc"):
        (root / rel).mkdir(parents=True, exist_ok=True)
    # Bionic knows Android's ids without files; glibc's toybox reads them here (/etc -> /system/etc as on Android).
    (root / "system" / "etc" / "passwd").write_text("root:x:0:0:root:/:/system/bin/sh\nshell:x:2000:2000:shell:/:/system/bin/sh\n")
    (root / "system" / "etc" / "group").write_text("root:x:0:\nshell:x:2000:\n")
    (root / "etc").symlink_to("system/etc")
    (root / "data" / "local" / "tmp").chmod(0o771)
    _sysfs(root / "sys", clusters)


def set_props(root: Path, props: dict[str, str]) -> None:
    (root / "system" / "etfarm.prop").write_text("".join(f"{k}={v}\n" for k, v in props.items()))


def _install_toybox(root: Path) -> None:
    """toybox in /system/bin, its glibc in /system/lib64 (interpreter and RUNPATH patched to it)."""
    lib64 = root / LIB64.lstrip("/")
    lib64.mkdir(parents=True)
    toybox = root / "system" / "bin" / "toybox"
    shutil.copy2(TOYBOX, toybox)
    ldd = subprocess.run(["ldd", TOYBOX], capture_output=True, text=True, check=True).stdout
    interpreter = ""
    for line in ldd.splitlines():  # "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
        words = line.split()
        path = words[2] if len(words) > 2 and words[1] == "=>" else words[0] if words and words[0].startswith("/") else ""
        if path:
            shutil.copy2(path, lib64 / Path(path).name)
            if not interpreter and words[0].startswith("/"):
                interpreter = Path(path).name
    subprocess.run([PATCHELF, "--set-interpreter", f"{LIB64}/{interpreter}", "--set-rpath", LIB64, str(toybox)],
                   check=True, capture_output=True)
    commands = set(subprocess.run([TOYBOX], capture_output=True, text=True, check=True).stdout.split())
    for command in sorted(ANDROID_COMMANDS & commands):
        (root / "system" / "bin" / command).symlink_to("toybox")
    applets = set(subprocess.run([BUSYBOX, "--list"], capture_output=True, text=True, check=True).stdout.split())
    _place(BUSYBOX, root / "system" / "bin" / "busybox")
    for command in sorted((ANDROID_COMMANDS - commands - BUSYBOX_STARTS) & applets):
        (root / "system" / "bin" / command).symlink_to("busybox")


def _place(source: str, dest: Path) -> None:
    """A hard link when the host allows it (qemu is 13 MB), else a copy."""
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _cpu_list(cpus: tuple[int, ...]) -> str:
    return f"{cpus[0]}-{cpus[-1]}" if len(cpus) > 1 else str(cpus[0])


def _sysfs(sys: Path, clusters: tuple[Cluster, ...]) -> None:
    cpu = sys / "devices" / "system" / "cpu"
    every = tuple(c for cluster in clusters for c in cluster.cpus)
    for name in ("possible", "present", "online"):
        _write(cpu / name, _cpu_list(every))
    for index, cluster in enumerate(clusters):
        policy = cpu / "cpufreq" / f"policy{cluster.cpus[0]}"
        for name, value in (("related_cpus", " ".join(map(str, cluster.cpus))), ("affected_cpus", " ".join(map(str, cluster.cpus))),
                            ("cpuinfo_max_freq", cluster.max_khz), ("cpuinfo_min_freq", 300000),
                            ("scaling_max_freq", cluster.max_khz), ("scaling_min_freq", 300000),
                            ("scaling_cur_freq", cluster.max_khz // 2), ("scaling_governor", cluster.governor),
                            ("scaling_available_governors", f"{cluster.governor} performance powersave")):
            _write(policy / name, str(value))
        for c in cluster.cpus:
            _write(cpu / f"cpu{c}" / "cpu_capacity", str(cluster.capacity))
            _write(cpu / f"cpu{c}" / "online", "1")
            for name, value in (("core_id", c - cluster.cpus[0]), ("cluster_id", index), ("physical_package_id", 0),
                                ("core_siblings_list", _cpu_list(cluster.cpus)), ("cluster_cpus_list", _cpu_list(cluster.cpus)),
                                ("package_cpus_list", _cpu_list(every)), ("thread_siblings_list", str(c))):
                _write(cpu / f"cpu{c}" / "topology" / name, str(value))
            (cpu / f"cpu{c}" / "cpufreq").symlink_to(f"../cpufreq/policy{cluster.cpus[0]}")
    for index, (kind, millideg) in enumerate(THERMAL_ZONES):
        _write(sys / "class" / "thermal" / f"thermal_zone{index}" / "type", kind)
        _write(sys / "class" / "thermal" / f"thermal_zone{index}" / "temp", str(millideg))
    battery = sys / "class" / "power_supply" / "battery"
    for name, value in (("capacity", "85"), ("status", "Charging"), ("temp", "294"), ("present", "1")):
        _write(battery / name, value)
    _write(sys / "class" / "power_supply" / "usb" / "online", "1")
