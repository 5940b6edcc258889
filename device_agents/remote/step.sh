# One process run in one device command: clean the output dir, record the device's state, run
# the runner, then send back every file it wrote, framed (device_agents/step.py reads the frames).
# POSIX sh for Linux boards and Android's toybox alike. Staged beside the runner; called as
#   sh STEP.sh NONCE OUT_DIR WORKDIR MAX_FILE_BYTES DESCRIBE(0|1) -- RUNNER COMMAND WORDS...
# Output, and nothing else on stdout: frames "@@NONCE KIND ..." lines; a `file` frame is followed
# by exactly SIZE raw bytes:
#   @@NONCE file NAME SIZE SHA256     the file's bytes follow
#   @@NONCE big NAME SIZE SHA256      over MAX_FILE_BYTES: not sent (the host pulls it or fails)
#   @@NONCE exit CODE                 the runner command's exit status
#   @@NONCE end
# Files named .etfarm-* are the step's own: facts (describe.sh), the runner's stdout and stderr.
nonce=$1 out=$2 workdir=$3 cap=$4 describe=$5
shift 5
[ "$1" = "--" ] && shift
here=$(dirname -- "$0")
rm -rf -- "$out" && mkdir -p -- "$out" || { printf '@@%s exit 125\n@@%s end\n' "$nonce" "$nonce"; exit 0; }
if [ "$describe" = 1 ]; then
  sh "$here/etfarm_describe.sh" >"$out/.etfarm-facts" 2>/dev/null
fi
cd -- "$workdir" || { printf '@@%s exit 125\n@@%s end\n' "$nonce" "$nonce"; exit 0; }
"$@" >"$out/.etfarm-stdout" 2>"$out/.etfarm-stderr" </dev/null
code=$?
cd -- "$out" || { printf '@@%s exit 125\n@@%s end\n' "$nonce" "$nonce"; exit 0; }
for f in .etfarm-* *; do
  [ -f "$f" ] && [ ! -L "$f" ] || continue
  size=$(wc -c <"$f" | tr -d ' ')
  sum=$(sha256sum <"$f" | cut -d ' ' -f 1)
  if [ "$size" -le "$cap" ]; then
    printf '@@%s file %s %s %s\n' "$nonce" "$f" "$size" "$sum"
    head -c "$size" -- "$f"
  else
    printf '@@%s big %s %s %s\n' "$nonce" "$f" "$size" "$sum"
  fi
done
printf '@@%s exit %s\n@@%s end\n' "$nonce" "$code" "$nonce"
exit 0
