#!/bin/sh
# scan_logs.sh SCAN_SH LOGS: tools/valgrind/scan.sh on hand-made valgrind logs (LOGS/<case>/):
# a clean run passes (a forked child whose log ends at its exec, descriptors the test
# itself handed down, its own valgrind log, a process of another tree whose parent pid
# is a pid of this one, a descriptor held by a process that crashed); an error, a
# definite leak, an error in a process later killed, a descriptor leaked into the plugin
# host, one a process opened and held at exit, and a directory without logs each fail,
# naming what was found.
set -u
scan=$1 logs=$2
fails=0
# expect CASE EXIT NEEDLE
expect() {
  out=$(sh "$scan" "$logs/$1" 2>&1)
  got=$?
  if [ "$got" -ne "$2" ] || ! printf '%s\n' "$out" | grep -qF -- "$3"; then
    echo "FAIL: $1: exit $got (want $2), output lacks '$3':"
    printf '%s\n' "$out"
    fails=1
  else
    echo "ok: $1: $3"
  fi
}
expect clean 0 "memcheck: 5 processes (1 without an exit summary"
expect clean 0 "0 errors, 0 bytes definitely lost, 0 bytes indirectly lost, 0 descriptors"
expect error 1 "vg.terr.200.log: 1 error(s)"
expect leak 1 "vg.tlea.300.log: 1 error(s), 48 bytes definitely lost"
expect killed 1 "vg.tkil.400.log: 1 error(s), 0 bytes definitely lost, 0 indirectly, leaked fds: none (no exit summary)"
expect fdleak 1 "vg.tfdl.501.log: 0 error(s), 0 bytes definitely lost, 0 indirectly, leaked fds: 7 (/tmp/out/report.json, inherited)"
expect fdleak 1 "vg.topen.600.log: 0 error(s), 0 bytes definitely lost, 0 indirectly, leaked fds: 5 (/tmp/out/r.json open (open64.c:41))"
expect fdleak 1 "2 descriptors leaked"
expect none 1 "no valgrind logs in"
exit $fails
