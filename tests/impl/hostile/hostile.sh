#!/bin/sh
# Hostile-impl driver: a scratch TMPDIR (case directories go there) and an "outside"
# directory the impl attacks — keep/ (a canary with a secret line, and a file named like
# an output) and case/out/ — then tests/impl/persist/run_persist.sh (phasegate run, exit
# code, the report checked by fz_check, no process of the run left running), then
# proof that nothing outside the case directories was written, removed or read into
# the report or the console.
#   hostile.sh RUN_PERSIST RUN_FAULT PHASEGATE FZ_CHECK OUTDIR EXPECTED_EXIT RUN_ARGS… -- CHECKS…
set -u
run_persist=$1 run_fault=$2 pg=$3 check=$4 out=$5 want=$6
shift 6
scratch="$out.scratch"
rm -rf "$scratch" && mkdir -p "$scratch/tmp" "$scratch/outside/keep" "$scratch/outside/case/out" ||
  exit 1
secret="PG-CANARY-c0ffee-$$ this line must never be read"
printf '%s\n' "$secret" > "$scratch/outside/keep/canary.txt"
printf '%s\n' "$secret" > "$scratch/outside/keep/scores.npy"
printf '%s\n' "$secret" > "$scratch/outside/case/out/scores.npy"
chmod 0600 "$scratch/outside/keep/canary.txt"
snapshot() { (cd "$scratch/outside" && find keep case -print0 | sort -z | xargs -0 ls -ld --time-style=+%s |
               awk '{print $1, $5, $6, $7}' && cat keep/* case/out/*); }
before=$(snapshot)
TMPDIR="$scratch/tmp" HOSTILE_OUTSIDE="$scratch/outside" HOSTILE_LOCK="$scratch/device.lock"
HOSTILE_ONCE="$scratch/attacked" # one attack per run: a replacement process behaves
export TMPDIR HOSTILE_OUTSIDE HOSTILE_LOCK HOSTILE_ONCE
/bin/sh "$run_persist" "$run_fault" "$pg" "$check" "$out" "$want" "$@" "absent=PG-CANARY-c0ffee"
rc=$?
after=$(snapshot)
if [ "$before" != "$after" ]; then
  echo "hostile.sh: the directory outside the case directories changed:"
  echo "--- before"; echo "$before"; echo "--- after"; echo "$after"
  exit 1
fi
# Case directories are private (0700) while they exist: checked on the ones an attack
# left behind (moved aside or re-made by a late writer).
for d in "$scratch"/tmp/pg-*; do
  [ -d "$d" ] || continue
  case "$d" in *.moved) ;; *) continue ;; esac
  m=$(stat -c %a "$d")
  [ "$m" = 700 ] || { echo "hostile.sh: case directory $d has mode $m, not 700"; exit 1; }
done
exit $rc
