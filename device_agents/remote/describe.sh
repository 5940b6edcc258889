# Print what this device is, as key=value lines (parsed by device_agents/facts.py into DeviceFacts).
# POSIX sh: runs on Linux boards (dash, bash) and Android (mksh + toybox) alike, with no GNU-only
# options (tests/integration/test_android.py runs it on the emulated phone). Unreadable facts are skipped.
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
  [ -z "$ETFARM_DESCRIBE_DYNAMIC" ] && [ -r "$c/cpu_capacity" ] && read -r v <"$c/cpu_capacity" && echo "cpus.cpu$id.capacity=$v"
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
# First run of a model: the CPU clusters (cpufreq policies: cpus, cores, max frequency, capacity,
# governor), on Linux boards and Android alike; `cpus: big|prime` pin the runner by them.
if [ -z "$ETFARM_DESCRIBE_DYNAMIC" ]; then
  # One cluster per cpufreq policy, named by its first cpu: clusters.cpu4.cpus=4-7 (taskset's syntax).
  for p in /sys/devices/system/cpu/cpufreq/policy[0-9]*; do
    [ -r "$p/related_cpus" ] && read -r cpus <"$p/related_cpus" || continue
    first='' n=0 list=''
    for c in $cpus; do
      [ -n "$first" ] || first=$c
      n=$((n + 1)) last=$c list=${list:+$list,}$c
    done
    [ -n "$first" ] || continue
    [ $((last - first + 1)) = $n ] && list=$first && [ $n -gt 1 ] && list=$first-$last
    k=clusters.cpu$first
    echo "$k.cpus=$list"
    echo "$k.cores=$n"
    [ -r "$p/cpuinfo_max_freq" ] && read -r v <"$p/cpuinfo_max_freq" && echo "$k.max_khz=$v"
    [ -r "$p/scaling_governor" ] && read -r v <"$p/scaling_governor" && echo "$k.governor=$v"
    f=/sys/devices/system/cpu/cpu$first/cpu_capacity
    [ -r "$f" ] && read -r v <"$f" && echo "$k.capacity=$v"
  done
fi
# Android (getprop exists): the platform's own answers. Every run: its thermal verdict (0 none ..
# 6 shutdown) and skin temperature (dumpsys thermalservice), battery level, charging state and
# temperature (dumpsys battery). First run of a model: what the device is (getprop).
if command -v getprop >/dev/null 2>&1; then
  dumpsys thermalservice 2>/dev/null | {
    hal=0 skin='' cached=''
    while IFS= read -r line; do
      case $line in
        "Thermal Status: "*) echo "android.thermal_status=${line#Thermal Status: }" ;;
        "Current temperatures from HAL:"*) hal=1 ;;
        "Current cooling devices"*) hal=0 ;;
        *"Temperature{"*"mType=3,"*)  # TYPE_SKIN
          v=${line#*mValue=}; v=${v%%,*}
          if [ $hal = 1 ]; then [ -n "$skin" ] || skin=$v; else [ -n "$cached" ] || cached=$v; fi ;;
      esac
    done
    [ -n "${skin:-$cached}" ] && echo "android.temp.skin_c=${skin:-$cached}"
  }
  dumpsys battery 2>/dev/null | {
    plugged=none
    while IFS=: read -r key value; do
      key=${key#"${key%%[! ]*}"} value=${value# }
      case $key in
        "AC powered") [ "$value" = true ] && plugged=ac ;;
        "USB powered") [ "$value" = true ] && plugged=usb ;;
        "Wireless powered") [ "$value" = true ] && plugged=wireless ;;
        "Dock powered") [ "$value" = true ] && plugged=dock ;;
        level) echo "android.battery.level=$value" ;;
        status)  # BatteryManager.BATTERY_STATUS_*
          case $value in 2) value=charging ;; 3) value=discharging ;; 4) value="not charging" ;; 5) value=full ;; *) value=unknown ;; esac
          echo "android.battery.status=$value" ;;
        temperature)  # tenths of a degree
          case $value in -*) sign=- t=${value#-} ;; *) sign='' t=$value ;; esac
          case $t in *[!0-9]*|'') ;; *) echo "android.temp.battery_c=$sign$((t / 10)).$((t % 10))" ;; esac ;;
      esac
    done
    echo "android.battery.plugged=$plugged"
  }
  [ -n "$ETFARM_DESCRIBE_DYNAMIC" ] && exit 0
  for p in ro.product.model ro.product.manufacturer ro.build.version.release ro.build.version.sdk ro.product.cpu.abi \
           ro.soc.model ro.soc.manufacturer; do
    v=$(getprop "$p" 2>/dev/null)
    [ -n "$v" ] && echo "android.${p#ro.}=$v"
  done
fi
exit 0
