# One process run in one device command: clean the output dir, record the device's state, run
# the runner, then send back every file it wrote, framed (device_agents/step.py reads the frames).
# POSIX sh for Linux boards and Android's toybox alike. Staged beside the runner; called as
#   sh STEP.sh NONCE OUT_DIR WORKDIR MAX_FILE_BYTES DESCRIBE -- RUNNER COMMAND WORDS...
# DESCRIBE: 0 no facts, 1 all of describe.sh's, 2 only what changes between runs (no uname,
# no getprop: clocks, governors, temperatures, load, memory, battery, thermal status).
# Output, and nothing else on stdout: header lines "@@NONCE KIND ...", then the data:
#   @@NONCE file NAME SIZE SHA256     sent below, in header order
#   @@NONCE big NAME SIZE SHA256      over MAX_FILE_BYTES: not sent (the host pulls it); the
#                                     step's own .etfarm-* files are always sent
#   @@NONCE odd COUNT                 files not sent: their names hold a newline or a backslash
#   @@NONCE exit CODE                 the runner command's exit status
#   @@NONCE data                      then every `file` back to back, exactly SIZE bytes each
#   @@NONCE end
# Files named .etfarm-* are the step's own: facts (describe.sh), the runner's stdout and stderr.
# Forks cost more than anything else here on a small board: one sha256sum, one stat and one cat
# for all files together, the shell's builtins for the rest.
nonce=$1 out=$2 workdir=$3 cap=$4 describe=$5
shift 5
[ "$1" = "--" ] && shift
here=${0%/*}
fail() { printf '@@%s exit 125\n@@%s data\n@@%s end\n' "$nonce" "$nonce" "$nonce"; exit 0; }
# Never clean up through a symbolic link planted under the workdir (out/MODEL -> /somewhere):
# every component from the workdir down to $out must be a real directory or absent.
case $out in "$workdir"/*) ;; *) echo "etfarm: $out is not inside $workdir" >&2; fail ;; esac
set -f; oldifs=$IFS; IFS=/; p=$workdir
for part in ${out#"$workdir"/}; do
  p=$p/$part
  if [ -L "$p" ]; then echo "etfarm: $p is a symbolic link; refusing to clean up through it" >&2; fail; fi
done
IFS=$oldifs; set +f
if [ -e "$out" ]; then rm -rf -- "$out" || fail; fi
mkdir -p -- "$out" || fail
if [ "$describe" != 0 ]; then
  [ "$describe" = 2 ] && ETFARM_DESCRIBE_DYNAMIC=1
  (. "$here/etfarm_describe.sh") >"$out/.etfarm-facts" 2>/dev/null
fi
cd -- "$workdir" || fail
# In the background, its pid beside the output dir (OUT.pid): the host kills the runner there on
# Ctrl-C (`kill_step_command`), since closing an SSH channel or adb shell does not. In a session of
# its own where the device has `setsid` (Linux boards, Android's toybox): the host then kills the
# whole session, whatever process groups are made inside it (toybox's `timeout` puts the runner in
# a group of its own and does not pass on the signals it gets) and whoever of it outlives its parent.
# No job control here, so the background job is no group leader and setsid(1) does not fork: $! is
# the session's id.
set +m
if command -v setsid >/dev/null 2>&1; then
  ETFARM_STEP_TAG=$nonce setsid "$@" >"$out/.etfarm-stdout" 2>"$out/.etfarm-stderr" </dev/null &
else
  ETFARM_STEP_TAG=$nonce "$@" >"$out/.etfarm-stdout" 2>"$out/.etfarm-stderr" </dev/null &
fi
pid=$!
echo "$pid" >"$out.pid"
# The shell's own word on a killed job ("Terminated") is not for the host: adb merges stderr into the stream.
{ wait "$pid"; code=$?; } 2>/dev/null
rm -f -- "$out.pid"
# Whatever the runner left running ends with it: nothing a job started outlives it, even when it ends
# normally. The session (setsid) or GNU `timeout` made a process group named by its pid; where that group
# is gone or was never made (no setsid, toybox and busybox `timeout`), the leftovers are found by the tag
# in their environment.
if ! kill -KILL -"$pid" 2>/dev/null; then
  for p in $(grep -lsxzF "ETFARM_STEP_TAG=$nonce" /proc/[0-9]*/environ 2>/dev/null); do
    p=${p#/proc/}
    kill -KILL "${p%/environ}" 2>/dev/null
  done
fi
cd -- "$out" || fail
# The runner's stdout and stderr come back whole up to 5 MiB each; past that only the first 1 MiB
# and the last 4 MiB (its result line is at the end), so a runner that floods cannot flood the host.
for f in .etfarm-stdout .etfarm-stderr; do
  size=$(wc -c <"$f" 2>/dev/null) || continue
  size=$((size))  # some wc pad with spaces
  if [ "$size" -gt 5242880 ]; then
    { head -c 1048576 -- "$f"; printf '\n[etfarm] %s bytes cut here (the runner wrote %s)\n' "$((size - 5242880))" "$size"
      tail -c 4194304 -- "$f"; } >"$f.cut" && mv -f -- "$f.cut" "$f"
  fi
done
# A name with a newline or a backslash cannot be framed (nor summed: sha256sum escapes it): such files
# are not sent, only counted (`odd`); the host refuses the run as the device's data problem.
nl='
'
odd=0
set --
for f in .etfarm-* *; do
  case $f in *"$nl"*|*\\*) odd=$((odd + 1)); continue ;; esac
  [ -f "$f" ] && [ ! -L "$f" ] && set -- "$@" "$f"
done
# Everything goes out in one write, from one file: adb acknowledges every chunk of a shell's
# output before the next (a round trip each), so many small writes would cost many round trips.
stream=../.etfarm-stream."$nonce"
{
  if [ $# -gt 0 ]; then
    sha256sum -- "$@" >../.etfarm-sums."$nonce" 2>/dev/null
    stat -c %s -- "$@" >../.etfarm-sizes."$nonce" 2>/dev/null
    exec 3<../.etfarm-sums."$nonce" 4<../.etfarm-sizes."$nonce"
    rm -f -- ../.etfarm-sums."$nonce" ../.etfarm-sizes."$nonce"
    n=$#
    while [ "$n" -gt 0 ]; do  # rotate "$@": the files to send stay, in header order
      f=$1
      shift
      n=$((n - 1))
      read -r sum rest <&3 || sum=-
      read -r size <&4 || size=0
      case $f in .etfarm-*) own=1 ;; *) own=0 ;; esac
      if [ "$own" = 1 ] || [ "$size" -le "$cap" ]; then
        printf '@@%s file %s %s %s\n' "$nonce" "$f" "$size" "$sum"
        set -- "$@" "$f"
      else
        printf '@@%s big %s %s %s\n' "$nonce" "$f" "$size" "$sum"
      fi
    done
  fi
  [ "$odd" -gt 0 ] && printf '@@%s odd %s\n' "$nonce" "$odd"
  printf '@@%s exit %s\n@@%s data\n' "$nonce" "$code" "$nonce"
  [ $# -gt 0 ] && cat -- "$@"
  printf '@@%s end\n' "$nonce"
} >"$stream" || fail
cat -- "$stream"
rm -f -- "$stream"
exit 0
