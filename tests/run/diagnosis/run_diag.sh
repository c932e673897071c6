#!/bin/sh
# Diagnosis test driver: runs `phasegate run` with the given arguments, checks its exit
# code, then the report and console with check_report.py.
#   run_diag.sh PYTHON PHASEGATE OUTDIR EXPECTED_EXIT RUN_ARGS… -- CHECK_ARGS…
set -u
py=$1 pg=$2 out=$3 want=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
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
  echo "run_diag.sh: phasegate exited $got, expected $want"
  exit 1
fi
exec "$py" "$here/check_report.py" "$out/report.json" "$out/console.txt" "$@"
