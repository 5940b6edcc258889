"""The emulated phone's power rails: `dumpsys powerstats` that answers as Android's PowerStatsService does.

AN EMULATION, with its own power model (no sensor is read: this host has none). The phone's
processes are those in its mount namespace (the device daemon's, emulate/adb_daemon.py); their CPU
time, utime + stime + the waited-for children's cutime + cstime over every live process there, counts
each CPU second once. Each rail's energy counter, in microwatt-seconds, is

    idle_mw x uptime + active_mw x that CPU time  (x 1000: mW s -> uW s)

so it grows with the phone's uptime and with the CPU its processes use: a model twice the work costs
twice the energy above idle. The output has PowerStatsService's own lines: the channels (`ChannelId:
N, ChannelName: NAME, ChannelSubsystem: SUB`) and one energy meter reading per channel (`ChannelId: N,
Timestamp (ms): T, Duration (ms): T, Energy (uWs): E`). The phone's `dumpsys` script hands
`powerstats` to /system/bin/etfarm-powerstats (one line in android_root.DUMPSYS).
"""

from __future__ import annotations

from pathlib import Path

# (name, subsystem, idle mW, mW per CPU second): a Pixel-like split, coefficients of our own choosing.
RAILS = (("S4M_VDD_CPUCL0", "CPU(LITTLE)", 12.0, 0.0), ("S3M_VDD_CPUCL1", "CPU(MID)", 8.0, 150.0),
         ("S2M_VDD_CPUCL2", "CPU(BIG)", 5.0, 900.0), ("S1S_VDD_MIF", "Memory", 20.0, 120.0))
CLK_TCK = 100  # USER_HZ: /proc/PID/stat counts CPU time in these ticks


def script() -> str:
    """The /system/bin/etfarm-powerstats script (mksh, toybox and busybox awk, as on the phone)."""
    channels = "".join(f'  print "  ChannelId: {i}, ChannelName: {name}, ChannelSubsystem: {sub}"\n'
                       for i, (name, sub, _, _) in enumerate(RAILS))
    meters = "".join(f'  printf "  ChannelId: {i}, Timestamp (ms): %d, Duration (ms): %d, Energy (uWs): %.0f\\n", '
                     f"ms, ms, ({idle} * up + {active} * cpu) * 1000\n"
                     for i, (_, _, idle, active) in enumerate(RAILS))
    return f"""#!/system/bin/sh
# dumpsys powerstats, EMULATED by the etfarm testbed (orchestrator/emulate/powerstats.py): energy per
# rail = idle power x uptime + a coefficient x the CPU time of the processes in this phone's mount namespace.
me=$(readlink /proc/self/ns/mnt)
stats=$(ls -l /proc/[0-9]*/ns/mnt 2>/dev/null | awk -v me="$me" '$NF == me {{ split($(NF-2), p, "/"); print "/proc/" p[3] "/stat" }}')
read up rest </proc/uptime
cat $stats 2>/dev/null | awk -v up="$up" '
{{ s = substr($0, index($0, ")") + 2); split(s, f, " "); ticks += f[12] + f[13] + f[14] + f[15] }}
END {{
  cpu = ticks / {CLK_TCK}.0; ms = int(up * 1000)
  print "PowerStatsService dumpsys: available Channels"
{channels}  print "PowerStatsService dumpsys: PowerStatsLogger stats"
  print "PowerStats Meter Data:"
{meters}}}'
"""


def install(root: Path) -> None:
    """Put the script in the phone's /system/bin."""
    path = root / "system" / "bin" / "etfarm-powerstats"
    path.write_text(script())
    path.chmod(0o755)
