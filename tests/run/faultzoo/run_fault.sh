#!/bin/sh
# Fault-zoo driver: runs `phasegate run` with the given arguments, checks its exit code,
# then checks the report with fz_check (console output is searched by absent=…).
#   run_fault.sh PHASEGATE FZ_CHECK OUTDIR EXPECTED_EXIT RUN_ARGS… -- CHECK_ARGS…
set -u
pg=$1 check=$2 out=$3 want=$4
shift 4
rm -rf "$out" && mkdir -p "$out"
run_args=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  run_args="$run_args '$(printf %s "$1" | sed "s/'/'\\\\''/g")'"
  shift
done
[ $# -gt 0 ] && shift
eval "\"$pg\" run $run_args --report \"$out/report.json\" --no-golden-cache" \
  >"$out/console.txt" 2>&1
got=$?
cat "$out/console.txt"
if [ "$got" -ne "$want" ]; then
  echo "run_fault.sh: phasegate exited $got, expected $want"
  exit 1
fi
exec "$check" "$out/report.json" file="$out/console.txt" "$@"
