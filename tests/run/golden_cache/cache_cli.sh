#!/bin/sh
# `phasegate cache info|prune|clear` end to end on a private cache filled by a real
# `phasegate run`: output, exit codes, the cap applied by run (PHASEGATE_CACHE_MAX_BYTES),
# stale temporary directories, and one clear error line (exit 2) for every bad value.
#   cache_cli.sh PHASEGATE WORK_DIR OP_DIR
set -u
pg=$1 work=$2 op=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
export PHASEGATE_CACHE_DIR="$work/cache"
unset PHASEGATE_CACHE_MAX_BYTES
fails=0
envcmd=
fail() { echo "FAIL: $*"; fails=1; }

# expect RC PATTERN ARGS...: exit code RC and PATTERN (grep -E) in stdout+stderr;
# envcmd="env X=Y" before it runs that one call under env (the variable is reset)
expect() {
  want=$1 pat=$2
  shift 2
  $envcmd "$pg" "$@" >out.txt 2>&1
  rc=$?
  envcmd=
  [ "$rc" -eq "$want" ] || fail "phasegate $* exited $rc, expected $want: $(cat out.txt)"
  grep -qE -- "$pat" out.txt || fail "phasegate $*: no /$pat/ in: $(cat out.txt)"
}
run_op() { "$pg" run --op-dir "$op" --impl exec:true --up-to-module 1 --report-dir r >/dev/null 2>&1; }
bytes() { "$pg" cache info | sed -n 's/^bytes: *\([0-9]*\).*/\1/p'; }
entries() { "$pg" cache info | sed -n 's/^entries: *\([0-9]*\)$/\1/p'; }

# an empty (not yet created) cache
expect 0 "^cache dir: $work/cache\$" cache info
expect 0 "^entries:   0\$" cache info
expect 0 "^cap:       2147483648 \\(2\\.0 GiB\\)\$" cache info
expect 0 "^in flight: 0 \\.tmp-\\*, 0 \\.trash-\\*\$" cache info
expect 0 "evicted 0 entries" cache prune

# a run fills it (the op's cases each store a golden)
run_op
n=$(entries)
[ "${n:-0}" -ge 2 ] || fail "a run left ${n:-no} entries"
b=$(bytes)
[ "${b:-0}" -gt 0 ] || fail "a run left ${b:-no} bytes"
expect 0 "^entries:   $n\$" cache info
envcmd="env PHASEGATE_CACHE_MAX_BYTES=1M" expect 0 "^cap:       1048576 \\(1\\.0 MiB\\)\$" cache info
envcmd="env PHASEGATE_CACHE_MAX_BYTES=0" expect 0 "^cap:       unlimited\$" cache info
# --dir names another cache
expect 0 "^entries:   0\$" cache info --dir "$work/other"
expect 0 "^entries:   $n\$" cache info --dir="$work/cache"

# prune to half the bytes evicts some entries, not all
half=$((b / 2))
expect 0 "^prune: evicted [1-9][0-9]* entries \\(.*\\), removed 0 stale temporary directories; [0-9]+ entries \\([^)]*\\) remain in $work/cache\$" cache prune --max-bytes "$half"
[ "$(bytes)" -le "$half" ] || fail "prune --max-bytes $half left $(bytes) bytes"
[ "$(entries)" -ge 1 ] || fail "prune --max-bytes $half evicted everything"

# the cap applies to the stores of a run: re-fill under a cap of half the full size
"$pg" cache clear >/dev/null
cap=$((b * 6 / 10))
PHASEGATE_CACHE_MAX_BYTES=$cap run_op
[ "$(bytes)" -le "$cap" ] || fail "a run under PHASEGATE_CACHE_MAX_BYTES=$cap left $(bytes) bytes"
[ "$(entries)" -ge 1 ] || fail "a run under a cap of $cap kept no entry"
# ... and a plain prune trims to the cap in force
"$pg" cache clear >/dev/null
run_op
envcmd="env PHASEGATE_CACHE_MAX_BYTES=$cap" expect 0 "^prune: evicted [1-9]" cache prune
[ "$(bytes)" -le "$cap" ] || fail "prune under the cap $cap left $(bytes) bytes"

# stale temporary directories: an old one goes, a young one (a running writer) stays
mkdir -p cache/.tmp-old cache/.tmp-young cache/.trash-left
touch -d '2 hours ago' cache/.tmp-old
expect 0 "^in flight: 2 \\.tmp-\\*, 1 \\.trash-\\*\$" cache info
expect 0 "removed 2 stale temporary directories" cache prune
[ -d cache/.tmp-young ] && [ ! -d cache/.tmp-old ] && [ ! -d cache/.trash-left ] ||
  fail "prune removed the wrong temporary directories: $(ls -A cache)"

# clear
m=$(entries)
expect 0 "^clear: evicted $m entries .*; 0 entries \\(0 B\\) remain" cache clear
expect 0 "^entries:   0\$" cache info

# errors: one line naming the value, exit 2
envcmd="env PHASEGATE_CACHE_MAX_BYTES=2Q" expect 2 "phasegate cache: error: PHASEGATE_CACHE_MAX_BYTES: '2Q' is not a size" cache info
envcmd="env PHASEGATE_CACHE_MAX_BYTES=lots" expect 2 "phasegate run: error: PHASEGATE_CACHE_MAX_BYTES: 'lots' is not a size" run --op-dir "$op" --impl exec:true --up-to-module 1 --report-dir r
[ $(grep -c . out.txt) -eq 1 ] || fail "run with a bad cap printed more than one line: $(cat out.txt)"
# without the cache the setting does not matter
envcmd="env PHASEGATE_CACHE_MAX_BYTES=lots" expect 1 "L1" run --op-dir "$op" --impl exec:true --up-to-module 1 --report-dir r --no-golden-cache
# ... and --no-golden-cache bypasses it: the (empty) cache gets no entry from that run
[ "$(entries)" -eq 0 ] || fail "a run with --no-golden-cache stored $(entries) entries"
expect 2 "phasegate cache: error: --max-bytes: '1.5G' is not a size" cache prune --max-bytes 1.5G
expect 2 "phasegate cache: error: --max-bytes: '-1' is not a size" cache prune --max-bytes=-1
expect 2 "phasegate cache: error: --max-bytes: '99999999999T' is too large" cache prune --max-bytes 99999999999T
expect 2 "phasegate cache: error: --max-bytes needs a value" cache prune --max-bytes
expect 2 "phasegate cache: error: --max-bytes applies to 'prune' only" cache clear --max-bytes 1
expect 2 "phasegate cache: error: unknown action 'purge': expected info, prune or clear" cache purge
expect 2 "phasegate cache: error: missing action" cache
expect 2 "phasegate cache: error: one action only, got 'clear' after 'info'" cache info clear
expect 2 "phasegate cache: error: unknown option '--force'" cache clear --force
expect 2 "phasegate cache: error: --dir needs a non-empty directory" cache info --dir ""
envcmd="env -u PHASEGATE_CACHE_DIR -u XDG_CACHE_HOME -u HOME" expect 2 "phasegate cache: error: golden cache: none of PHASEGATE_CACHE_DIR, XDG_CACHE_HOME, HOME is set" cache info
expect 0 "usage: phasegate cache info\\|prune\\|clear" cache --help
[ $(wc -l <out.txt) -gt 5 ] || fail "cache --help is too short"
exit $fails
