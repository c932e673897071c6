#!/bin/sh
# tests/tensors — `phasegate gen` end to end: writes every primary input, identical
# bytes for any --threads, --up-to-module filters, --max-bytes refuses with the
# budget message, unknown cases and bad options exit 2.
#   gen_cli.sh PHASEGATE OP_DIR WORKDIR
set -u
PG=$1 OP=$2 W=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$PG" gen --help >/dev/null || fail "--help"
"$PG" gen --op-dir "$OP" --case L2_small --out "$W/a" --threads 1 || fail "gen 1 thread"
"$PG" gen --op-dir "$OP" --case L2_small --out "$W/b" --threads 3 || fail "gen 3 threads"
for n in x w b; do
  [ -s "$W/a/$n.npy" ] || fail "$n.npy missing"
  cmp -s "$W/a/$n.npy" "$W/b/$n.npy" || fail "$n.npy differs between thread counts"
done
"$PG" gen --op-dir "$OP" --case L2_small --out "$W/c" --up-to-module 1 || fail "up-to-module"
[ -f "$W/c/x.npy" ] && [ -f "$W/c/w.npy" ] && [ ! -f "$W/c/b.npy" ] || fail "--up-to-module 1 should write x, w only"
out=$("$PG" gen --op-dir "$OP" --case L4_big --out "$W/d" --max-bytes 1G 2>&1) && fail "budget not enforced"
echo "$out" | grep -q "case L4_big needs 2.0 GiB for inputs, over --max-bytes 1 GiB" || \
  echo "$out" | grep -q "case L4_big needs .* GiB for inputs, over --max-bytes 1 GiB" || fail "budget message: $out"
out=$("$PG" gen --op-dir "$OP" --case nope --out "$W/e" 2>&1); [ $? -eq 2 ] || fail "unknown case exit"
echo "$out" | grep -q "no case 'nope'" || fail "unknown case message: $out"
"$PG" gen --op-dir "$OP" --case L2_small --out "$W/e" --threads 0 2>/dev/null; [ $? -eq 2 ] || fail "--threads 0"
"$PG" gen --op-dir "$OP" --out "$W/e" 2>/dev/null; [ $? -eq 2 ] || fail "missing --case"
echo ok
