#!/bin/sh
# vg.sh PROGRAM ARGS...: runs one of phasegate's programs under valgrind memcheck (the
# memcheck preset, tools/valgrind/memcheck.sh and the tools/memcheck/* tests wrap `phasegate`
# with it; docs/testing.md "valgrind memcheck").
#
# - One log per process, PG_VALGRIND_LOG_DIR/vg.<tree>.<pid>.log (default directory:
#   ./valgrind-logs): stdout and stderr stay the program's own, so the tests' checks of
#   them still hold. <tree> is chosen here, once per wrapped command, and valgrind hands
#   its options down to the processes it follows: pids wrap around in a long run, and
#   scan.sh looks for a child's parent in its own tree.
# - The program exits 99 on any memcheck error, a definite or indirect leak included.
# - Children that are ours are followed: the plugin host (posix_spawn) and the
#   `phasegate serve` daemon (/proc/self/exe); forks (the sandbox) are followed anyway.
#   Whatever runs from /bin, /usr or a Python is not: workers start as `/bin/sh -c
#   COMMAND`, so a worker and everything below it runs natively (it may be a fault-zoo
#   worker that corrupts memory on purpose).
# - --track-fds=yes lists the descriptors open at exit; scan.sh flags a descriptor a
#   traced child inherited beyond 0..4 (0..2 and the worker protocol's 3,4): one the
#   parent leaked across exec.
# PG_VALGRIND_EXTRA adds options (e.g. --track-origins=yes: where an uninitialised value
# came from, about twice as slow).
set -u
here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
logs=${PG_VALGRIND_LOG_DIR:-$PWD/valgrind-logs}
mkdir -p "$logs" || exit 1
tree=$$-$(date +%s%N) # in the option, not the environment: a daemon keys its warm
                      # processes on the environment of the run that leases them
exec valgrind --tool=memcheck --error-exitcode=99 \
  --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
  --track-fds=yes --num-callers=30 ${PG_VALGRIND_EXTRA:-} \
  --trace-children=yes --trace-children-skip='/bin/*,/usr/*,/sbin/*,*python*,*/sh,*/bash,*/env' \
  --suppressions="$here/phasegate.supp" --gen-suppressions=all \
  --log-file="$logs/vg.$tree.%p.log" "$@"
