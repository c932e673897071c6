#!/bin/sh
# `phasegate run` usage errors: each must exit 2 with a message naming the problem,
# and never write a report.
#   cli.sh PHASEGATE OP_DIR PLUGIN OUTDIR
set -u
pg=$1 op=$2 plugin=$3 out=$4
rm -rf "$out" && mkdir -p "$out"
fails=0
expect() { # expect CODE NEEDLE ARGS...
  code=$1 needle=$2
  shift 2
  "$pg" run "$@" >"$out/o.txt" 2>&1
  got=$?
  if [ $got -ne "$code" ] || ! grep -qF -- "$needle" "$out/o.txt"; then
    echo "FAIL: phasegate run $* -> exit $got (want $code), output:"; cat "$out/o.txt"
    fails=1
  else
    echo "ok: $needle"
  fi
}
r="--report $out/r.json"
expect 2 "--impl SPEC is required" --op-dir "$op" --up-to-module 1 $r
expect 2 "--up-to-module K is required" --op-dir "$op" --impl "plugin:$plugin" $r
expect 2 "--op-dir DIR or --contract FILE is required" --impl "plugin:$plugin" --up-to-module 1 $r
expect 2 "outside 1..3" --op-dir "$op" --impl "plugin:$plugin" --up-to-module 4 $r
expect 2 "no case 'nope'" --op-dir "$op" --impl "plugin:$plugin" --up-to-module 1 --case nope $r
expect 2 "--levels: expected" --op-dir "$op" --impl "plugin:$plugin" --up-to-module 1 --levels X9 $r
expect 2 "unknown option '--bogus'" --op-dir "$op" --impl "plugin:$plugin" --up-to-module 1 --bogus $r
expect 2 "expected plugin:PATH.so" --op-dir "$op" --impl "whatever" --up-to-module 1 $r
expect 2 "no module_interfaces.yaml" --op-dir "$out/nowhere" --impl "plugin:$plugin" --up-to-module 1 $r
expect 2 "not a valid mode name" --op-dir "$op" --impl "plugin:$plugin" --up-to-module 1 --modes "a/b" $r
expect 2 "matches the selection" --op-dir "$op" --impl "plugin:$plugin" --up-to-module 1 --levels L4 $r
expect 0 "usage: phasegate run" --help
# a refusal once the op is known replaces the verdict with ERROR (the last one: no case
# matches --levels L4); the command line's own errors write nothing
grep -q '"status":[[:space:]]*"ERROR"' "$out/r.json" 2>/dev/null || { echo "FAIL: a refused run wrote no ERROR report"; fails=1; }
# --case and --levels select; --device-id and CTest resource groups reach the impl
# (the fault-free plugin passes either way: this checks selection and exit code).
expect 0 "1 passed, 0 failed" --op-dir "$op" --impl "plugin:$plugin" --up-to-module 1 \
  --case L2_basic --device-id 5 --report "$out/ok.json" --no-golden-cache
expect 0 "2 passed, 0 failed" --op-dir "$op" --impl "plugin:$plugin" --up-to-module 1 \
  --levels L2 --report "$out/ok2.json" --no-golden-cache
exit $fails
