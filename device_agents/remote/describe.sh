# Print what this device is, as key=value lines (parsed by device_agents.base.parse_facts).
# POSIX sh: runs on Linux boards and Android's toybox alike. Unreadable facts are skipped.
echo "abi=$(uname -m 2>/dev/null)"
echo "kernel=$(uname -r 2>/dev/null)"
echo "os=$(uname -s 2>/dev/null)"
n=0
for c in /sys/devices/system/cpu/cpu[0-9]*; do
  [ -d "$c" ] || continue
  n=$((n + 1))
  id=${c##*/cpu}
  f=$c/cpufreq
  [ -r "$f/scaling_cur_freq" ] && echo "cpus.cpu$id.cur_khz=$(cat "$f/scaling_cur_freq")"
  [ -r "$f/cpuinfo_max_freq" ] && echo "cpus.cpu$id.max_khz=$(cat "$f/cpuinfo_max_freq")"
  [ -r "$f/scaling_min_freq" ] && echo "cpus.cpu$id.min_khz=$(cat "$f/scaling_min_freq")"
  [ -r "$f/scaling_governor" ] && echo "cpus.cpu$id.governor=$(cat "$f/scaling_governor")"
done
online=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null || echo "$n")
echo "cores=$online"
[ -r /proc/loadavg ] && echo "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
if [ -r /proc/meminfo ]; then
  awk '/^MemTotal:/ {print "mem_total_kb=" $2} /^MemAvailable:/ {print "mem_available_kb=" $2}' /proc/meminfo
fi
for z in /sys/class/thermal/thermal_zone*; do
  [ -r "$z/temp" ] || continue
  t=$(cat "$z/type" 2>/dev/null | tr -c 'A-Za-z0-9_\n-' '_')
  echo "thermal.${z##*/}=${t:-unknown}:$(cat "$z/temp" 2>/dev/null)"
done
# Battery level and charging state (Android phones, laptops): /sys/class/power_supply.
for b in /sys/class/power_supply/*; do
  [ -r "$b/capacity" ] || continue
  s=$(echo "${b##*/}" | tr -c 'A-Za-z0-9_\n' '_')
  echo "battery.$s.level=$(cat "$b/capacity" 2>/dev/null)"
  [ -r "$b/status" ] && echo "battery.$s.status=$(cat "$b/status" 2>/dev/null)"
done
# Android's own thermal verdict (0 none .. 6 shutdown), where the platform has the service.
if command -v dumpsys >/dev/null 2>&1; then
  s=$(dumpsys thermalservice 2>/dev/null | sed -n 's/^Thermal Status: *//p' | head -n 1)
  [ -n "$s" ] && echo "android.thermal_status=$s"
fi
if command -v getprop >/dev/null 2>&1; then
  for p in ro.product.model ro.product.manufacturer ro.build.version.release ro.build.version.sdk ro.product.cpu.abi ro.soc.model; do
    v=$(getprop "$p" 2>/dev/null)
    [ -n "$v" ] && echo "android.$p=$v" | sed 's/android\.ro\./android./'
  done
fi
exit 0
