#!/bin/sh
# repo/huge_files: a 100 MB contract and a 100 MB suite (sparse files, so no disk
# traffic) given to `phasegate validate` are refused at once, exit 2, each with a
# FILE:1:1 error naming the size — the suite loader is otherwise tested only on an
# in-memory buffer. Both findings are reported (every finding, not the first).
# usage: huge_files.sh PHASEGATE TMPDIR
set -eu
pg=$1 t=$2
fail() { echo "repo/huge_files: $*" >&2; exit 1; }
rm -rf "$t"; mkdir -p "$t"
printf 'op: x\n' > "$t/module_interfaces.yaml"
printf '{"op": "x", "cases": [' > "$t/adversarial_suite.json"
truncate -s 100M "$t/module_interfaces.yaml" "$t/adversarial_suite.json"
rc=0
"$pg" validate --op-dir "$t" > "$t/out" 2> "$t/err" || rc=$?
cat "$t/err"
[ "$rc" -eq 2 ] || fail "exit $rc, expected 2"
grep -q "^$t/module_interfaces.yaml:1:1: error: .*104857600 bytes" "$t/err" ||
  fail "no size error for the contract"
grep -q "^$t/adversarial_suite.json:1:1: error: .*104857600 bytes" "$t/err" ||
  fail "no size error for the suite"
rm -rf "$t"
echo "repo/huge_files: ok"
