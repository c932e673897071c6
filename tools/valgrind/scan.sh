#!/bin/sh
# scan.sh LOG_DIR: reads the valgrind logs vg.sh wrote (one per process) and fails when
# one shows a memcheck error, a definite or indirect leak, or a leaked descriptor: one
# a traced child inherited beyond 0..4 (its phasegate parent leaked it across exec: 0..2
# are stdio, 3 and 4 the worker protocol's), or one a process opened and still held when
# it exited normally. Prints each process with a finding and a summary line:
#   memcheck: N processes (K without an exit summary: ...), E errors, D bytes definitely
#   lost, I bytes indirectly lost, F descriptors leaked
# A log has no exit summary when its process exec'd a program valgrind does not follow
# (posix_spawn of /bin/sh for a worker: the child's log ends at the exec) or was killed
# with SIGKILL (the tests kill daemons, hung workers' groups): its errors up to then are
# still counted from the log body.
set -u
dir=${1:?usage: scan.sh LOG_DIR}
set -- "$dir"/vg.*.log
if [ ! -e "$1" ]; then
  echo "memcheck: no valgrind logs in $dir"
  exit 1
fi
awk '
# Per log: its pid and parent, errors, leaks, the descriptors it inherited (beyond 0..4)
# and the ones it opened and still held when it exited (valgrind logs left out).
# - A child (its parent is a traced process: an exec of the plugin host or the daemon,
#   or a fork) leaked a descriptor when it inherited one its root process (the phasegate
#   the test started) did not inherit from the test itself.
# - A process that exited (not by a signal; not a fork, which holds the descriptors of its parent) leaked
#   every descriptor it opened and did not close.
# A log is vg.<tree>.<pid>.log: the parent of a child is looked for in its tree (pids wrap).
function key(f,  t) { t = f; sub(/.*\/vg\./, "", t); sub(/^vg\./, "", t); sub(/\.log$/, "", t)
                      tree = t; sub(/\.[0-9]+$/, "", tree); return t }
BEGIN { for (i = 1; i < ARGC; i++) known[key(ARGV[i])] = 1 }
FNR == 1 { n++; file[n] = FILENAME; k = key(FILENAME); idx[k] = n; tr[n] = tree; fd = -1 }
{ sub(/^==[0-9]+== ?/, "") }
/^Command: / { cmd[n] = substr($0, 10) }
/^Parent PID: / { ppid[n] = tr[n] "." $3 }
/^Process terminating with default action/ { sig[n] = 1 }
/^(Invalid (read|write|free)|Conditional jump|Use of uninitialised|Syscall param|Mismatched free|Source and destination overlap|Argument .* fishy)/ { body[n]++ }
/^ERROR SUMMARY: / { summary[n] = 1; errs[n] = $3 + 0 }
/^ *definitely lost: / { v = $3; gsub(/,/, "", v); def[n] = v + 0 }
/^ *indirectly lost: / { v = $3; gsub(/,/, "", v); ind[n] = v + 0 }
/^Open [A-Za-z_ ]*(descriptor|socket) [0-9]+:/ {
  fd = $0; sub(/:.*/, "", fd); sub(/.* /, "", fd); fd += 0
  what = $0; sub(/^[^:]*: ?/, "", what)
  if (what ~ /\/vg\.[^\/]*\.[0-9]+\.log$/) fd = -1 # a valgrind log (vg.sh names them)
  next }
fd >= 0 && /<inherited from parent>/ { if (fd > 4) inh[n, fd] = what; fd = -1; next }
fd >= 0 && /^ *at 0x/ { at = $0; sub(/^ *at 0x[0-9A-Fa-f]+: /, "", at); opened[n, fd] = what " " at; fd = -1 }
END {
  for (i = 1; i <= n; i++) {
    r = i
    while ((ppid[r] in known) && guard++ < 1000) r = idx[ppid[r]]
    guard = 0
    forked = (ppid[i] in known) && cmd[idx[ppid[i]]] == cmd[i]
    e = summary[i] ? errs[i] : body[i]
    leak = ""; nleak = 0
    if (r != i)
      for (k in inh) { split(k, kk, SUBSEP)
        if (kk[1] == i && !((r, kk[2]) in inh)) { leak = leak " " kk[2] " (" inh[k] ", inherited)"; nleak++ } }
    if (!sig[i] && !forked)
      for (k in opened) { split(k, kk, SUBSEP)
        if (kk[1] == i) { leak = leak " " kk[2] " (" opened[k] ")"; nleak++ } }
    procs++; if (!summary[i]) nosum++
    if (e > 0 || def[i] > 0 || ind[i] > 0 || nleak > 0) {
      bad++
      printf "memcheck: %s: %d error(s), %d bytes definitely lost, %d indirectly, leaked fds:%s%s\n  %s\n",
             file[i], e, def[i], ind[i], leak == "" ? " none" : leak,
             summary[i] ? "" : " (no exit summary)", cmd[i]
    }
    tot_e += e; tot_def += def[i]; tot_ind += ind[i]; tot_fd += nleak
  }
  printf "memcheck: %d processes (%d without an exit summary: exec of an untraced program or SIGKILL), %d errors, %d bytes definitely lost, %d bytes indirectly lost, %d descriptors leaked\n",
         procs, nosum, tot_e, tot_def, tot_ind, tot_fd
  exit bad > 0 }
' "$@"
