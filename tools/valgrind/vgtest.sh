#!/bin/sh
# vgtest.sh LOG_DIR COMMAND...: one tools/memcheck/* test. Runs COMMAND (an existing test's
# command with phasegate replaced by the valgrind wrapper) with its valgrind logs in a
# fresh LOG_DIR, then reads them (scan.sh): passes when COMMAND passed and no process
# showed a memcheck error, a definite or indirect leak or a descriptor leaked into a child.
set -u
logs=$1
shift
rm -rf "$logs" && mkdir -p "$logs" || exit 1
PG_VALGRIND_LOG_DIR=$logs
export PG_VALGRIND_LOG_DIR
"$@"
rc=$?
sh "$(dirname -- "$0")/scan.sh" "$logs"
scan=$?
if [ "$rc" -eq 77 ] && [ "$scan" -eq 0 ]; then
  exit 77 # the test skipped itself (a missing module): so does this one
fi
if [ "$rc" -ne 0 ]; then
  echo "vgtest.sh: the test exited $rc (99: valgrind found an error in phasegate)"
  exit 1
fi
[ "$scan" -eq 0 ] || { echo "vgtest.sh: see the logs named above"; exit 1; }
exit 0
