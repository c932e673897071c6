#!/bin/sh
# memcheck.sh [CTEST_ARGS...]: the full valgrind memcheck run (docs/testing.md "valgrind
# memcheck"). Configures and builds the memcheck preset (-O1 -g, no sanitizers), runs its
# tests (the cli, persist, serve, python_impl and worker_side areas) with phasegate, the
# plugin host and the serve daemon under valgrind (vg.sh), then reads every process's log
# (scan.sh). Exit 0 only when every test passed and no log has an error, a definite or
# indirect leak or a descriptor leaked into a child.
#   tools/valgrind/memcheck.sh                 # everything (about 15 minutes on 2 cores)
#   tools/valgrind/memcheck.sh -R impl/persist/   # a subset (any ctest arguments)
set -u
src=$(CDPATH= cd -- "$(dirname -- "$0")/../.." && pwd)
cd "$src" || exit 1
if ! command -v valgrind >/dev/null 2>&1; then
  echo "memcheck.sh: valgrind is not installed (tools/bootstrap.sh installs it)" >&2
  exit 2
fi
jobs=${PG_MEMCHECK_JOBS:-2}
cmake --preset memcheck >/dev/null || exit 1
cmake --build --preset memcheck -j"$jobs" >/dev/null || { cmake --build --preset memcheck -j1; exit 1; }
logs="$src/build/memcheck/valgrind-logs" # the memcheck test preset's PG_VALGRIND_LOG_DIR
rm -rf "$logs" && mkdir -p "$logs" || exit 1
t0=$(date +%s)
ctest --preset memcheck -j"$jobs" "$@"
rc=$?
t1=$(date +%s)
sh "$src/tools/valgrind/scan.sh" "$logs"
scan=$?
echo "memcheck.sh: ctest exit $rc, logs $scan, $((t1 - t0)) s (logs: $logs)"
[ "$rc" -eq 0 ] && [ "$scan" -eq 0 ]
