#!/bin/sh
# Persistent-impl fault driver: the fault zoo's run_fault.sh (phasegate run + exit code
# + fz_check on the report), with every impl process tagged through the environment,
# then proof that nothing the run started is still running afterwards, and that the
# worker logs it left in $TMPDIR are the ones its messages name (an empty log is not
# kept: it would only pile up).
#   run_persist.sh RUN_FAULT PHASEGATE FZ_CHECK OUTDIR EXPECTED_EXIT RUN_ARGS… -- CHECK_ARGS…
set -u
run_fault=$1
shift
out=$3 tmp="$3.tmp"
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
tag="pg_persist_$$_$(date +%s%N)"
PG_TEST_TAG=$tag
export PG_TEST_TAG
TMPDIR=$tmp /bin/sh "$run_fault" "$@"
rc=$?
unset PG_TEST_TAG # the checks below must not carry the tag themselves
for log in "$tmp"/phasegate-worker-*; do
  [ -e "$log" ] || continue
  [ -s "$log" ] || { echo "run_persist.sh: an empty worker log was left: $log"; rc=1; }
  grep -qF "$log" "$out/report.json" "$out/console.txt" ||
    { echo "run_persist.sh: a worker log was left that no message names: $log"; rc=1; }
done
# Everything the run started inherited PG_TEST_TAG: none of it may outlive the run.
left=""
for i in 1 2 3 4 5 6 7 8 9 10; do
  left=$(grep -ls "PG_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | grep -v "/proc/$$/" |
         sed 's@/proc/\([0-9]*\)/environ@\1@' | tr '\n' ' ')
  [ -z "$left" ] && break
  sleep 0.2
done
if [ -n "$left" ]; then
  echo "run_persist.sh: processes left running after the run: $left"
  for p in $left; do tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null; echo; done
  kill -9 $left 2>/dev/null
  exit 1
fi
exit $rc
