# Print what this device is, as key=value lines (parsed by device_agents.base.parse_facts).
# POSIX sh: runs on Linux boards and Android's toybox alike. Unreadable facts are skipped.
# Runs before every process run (remote/step.sh sources it), so it reads files with the
# shell's own `read` and forks as little as it can: forks are most of its cost.
# ETFARM_DESCRIBE_DYNAMIC=1 (step.sh, every run but a model's first): skip what never changes.
if [ -z "$ETFARM_DESCRIBE_DYNAMIC" ]; then
  set -- $(uname -s -r -m 2>/dev/null)
  echo "os=$1"
  echo "kernel=$2"
  echo "abi=$3"
fi
n=0
for c in /sys/devices/system/cpu/cpu[0-9]*; do
  [ -d "$c" ] || continue
  n=$((n + 1))
  id=${c##*/cpu}
  f=$c/cpufreq
  [ -r "$f/scaling_cur_freq" ] && read -r v <"$f/scaling_cur_freq" && echo "cpus.cpu$id.cur_khz=$v"
  [ -r "$f/cpuinfo_max_freq" ] && read -r v <"$f/cpuinfo_max_freq" && echo "cpus.cpu$id.max_khz=$v"
  [ -r "$f/scaling_min_freq" ] && read -r v <"$f/scaling_min_freq" && echo "cpus.cpu$id.min_khz=$v"
  [ -r "$f/scaling_governor" ] && read -r v <"$f/scaling_governor" && echo "cpus.cpu$id.governor=$v"
done
online=$n
if [ -r /sys/devices/system/cpu/online ]; then  # "0-7" or "0-3,6": count without forking
  read -r ranges </sys/devices/system/cpu/online
  online=0
  IFS=,
  for r in $ranges; do
    case $r in *-*) online=$((online + ${r#*-} - ${r%-*} + 1)) ;; *) online=$((online + 1)) ;; esac
  done
  unset IFS
fi
echo "cores=$online"
[ -r /proc/loadavg ] && read -r a b c rest </proc/loadavg && echo "loadavg=$a $b $c"
if [ -r /proc/meminfo ]; then
  while read -r key value rest; do
    case $key in
      MemTotal:) echo "mem_total_kb=$value" ;;
      MemAvailable:) echo "mem_available_kb=$value"; break ;;
    esac
  done </proc/meminfo
fi
for z in /sys/class/thermal/thermal_zone*; do
  [ -r "$z/temp" ] && read -r t <"$z/temp" 2>/dev/null || continue
  kind=unknown
  [ -r "$z/type" ] && read -r kind <"$z/type"
  echo "thermal.${z##*/}=${kind:-unknown}:$t"
done
# Battery level and charging state (Android phones, laptops): /sys/class/power_supply.
for b in /sys/class/power_supply/*; do
  [ -r "$b/capacity" ] && read -r level <"$b/capacity" 2>/dev/null || continue
  echo "battery.${b##*/}.level=$level"
  [ -r "$b/status" ] && read -r s <"$b/status" && echo "battery.${b##*/}.status=$s"
done
# Android: the platform's own thermal verdict (0 none .. 6 shutdown) and what the device is.
if command -v getprop >/dev/null 2>&1; then
  s=$(dumpsys thermalservice 2>/dev/null | sed -n 's/^Thermal Status: *//p' | head -n 1)
  [ -n "$s" ] && echo "android.thermal_status=$s"
  [ -n "$ETFARM_DESCRIBE_DYNAMIC" ] && exit 0
  for p in ro.product.model ro.product.manufacturer ro.build.version.release ro.build.version.sdk ro.product.cpu.abi ro.soc.model; do
    v=$(getprop "$p" 2>/dev/null)
    [ -n "$v" ] && echo "android.${p#ro.}=$v"
  done
fi
exit 0
