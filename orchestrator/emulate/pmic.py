"""The emulated boards' PMIC: `vcgencmd pmic_read_adc` in the Raspberry Pi 5's format, on the emulated board's sshd's PATH.

AN EMULATION, with its own power model (no sensor is read: this host has none). The board's processes are
those started through its sshd (they carry its testbed tag, emulate/__init__.py); their CPU time, utime +
stime + the waited-for children's cutime + cstime over every live one, counts each CPU second once. Each call
is a snapshot of the power since the previous call (the last reading is kept in `pmic.state` beside the
script): VDD_CORE's current is 0.6 A + 2.0 A per busy CPU second per second at 0.72 V, the other rails
constant, each printed as `NAME_A current(N)=x.xxxxxxxxA` and `NAME_V volt(N)=x.xxxxxxxxV`, with EXT5V_V (the
input, no current) last, as a Pi 5 prints them. Any other `vcgencmd` command answers as the firmware does for
a command it does not have. emulate/sshd.py puts the script's folder first on the sessions' PATH.
"""

from __future__ import annotations

from pathlib import Path

# (rail, current index, voltage index, volts, amps idle): the Pi 5's rails, figures of our own choosing.
RAILS = (("3V7_WL_SW", 0, 8, 3.7, 0.02), ("3V3_SYS", 1, 9, 3.31, 0.11), ("1V8_SYS", 2, 10, 1.8, 0.2),
         ("DDR_VDD2", 3, 11, 1.1, 0.03))
CORE = ("VDD_CORE", 7, 15, 0.72, 0.6)
CORE_AMPS_PER_BUSY_CPU = 2.0
CLK_TCK = 100


def script(folder: Path) -> str:
    rails = "".join(f'  printf "%12s current({i})=%.8fA\\n", "{n}_A", {a}\n' for n, i, _, _, a in RAILS)
    rails += f'  printf "%12s current({CORE[1]})=%.8fA\\n", "{CORE[0]}_A", core\n'
    volts = "".join(f'  printf "%12s volt({j})=%.8fV\\n", "{n}_V", {v}\n' for n, _, j, v, _ in (*RAILS, CORE))
    return f"""#!/bin/sh
# vcgencmd, EMULATED by the etfarm testbed (orchestrator/emulate/pmic.py): pmic_read_adc only, in the Pi 5's
# format; the core rail's current grows with the CPU time of the processes started through this board's sshd.
if [ "$1" != pmic_read_adc ]; then echo 'error=1 error_msg="Command not registered"'; exit 1; fi
state={folder}/pmic.state
ticks=$(grep -l -s -a "ETFARM_TESTBED_TAG=$ETFARM_TESTBED_TAG" /proc/[0-9]*/environ | sed 's,/environ$,/stat,' \\
  | xargs cat 2>/dev/null | awk '{{ s = substr($0, index($0, ")") + 2); split(s, f, " "); t += f[12] + f[13] + f[14] + f[15] }}
  END {{ print t + 0 }}')
now=$(date +%s%N)
last=$(cat "$state" 2>/dev/null || echo "$now $ticks")
echo "$now $ticks" >"$state"
echo "$last" | awk -v now="$now" -v ticks="$ticks" '{{
  dt = (now - $1) / 1e9; busy = dt > 0 ? (ticks - $2) / {CLK_TCK}.0 / dt : 0; if (busy < 0) busy = 0
  core = {CORE[4]} + {CORE_AMPS_PER_BUSY_CPU} * busy
{rails}{volts}  printf "%12s volt(24)=%.8fV\\n", "EXT5V_V", 5.09
}}'
"""


def install(folder: Path) -> Path:
    """Write `vcgencmd` into `folder` (made if missing); returns the folder, for the sessions' PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "vcgencmd"
    path.write_text(script(folder))
    path.chmod(0o755)
    return folder
