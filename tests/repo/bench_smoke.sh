#!/bin/sh
# repo/bench_scripts: tools/bench/bench_compare.sh and bench_tensor.sh run on tiny inputs
# against the test build and print every ratio they promise (compare vs memcpy and vs
# numpy; fills vs numpy's generators; .npy read vs numpy.load), each a number.
# usage: bench_smoke.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1 build=$2
fail() { echo "repo/bench_scripts: $*" >&2; exit 1; }
out=$(PG_BENCH_QUICK=1 bash "$src/tools/bench/bench_compare.sh" "$build" 4 1) ||
  fail "bench_compare.sh failed"
printf '%s\n' "$out"
for what in 'compare / memcpy (same thread count):' 'compare / numpy (allclose + metrics):'; do
  line=$(printf '%s\n' "$out" | grep -F -- "$what") || fail "bench_compare.sh: no '$what' line"
  printf '%s\n' "$line" | grep -Eq ':[[:space:]]+[0-9]+\.[0-9]+x?$' ||
    fail "bench_compare.sh: no number in '$line'"
done
out=$(sh "$src/tools/bench/bench_tensor.sh" "$build" 65536) || fail "bench_tensor.sh failed"
printf '%s\n' "$out"
for what in 'fill normal  float32  1 thread' 'fill uniform float32  1 thread' 'npy read  into memory'; do
  line=$(printf '%s\n' "$out" | grep -F -- "$what") || fail "bench_tensor.sh: no '$what' line"
  printf '%s\n' "$line" | grep -Eq 'ratio [0-9]+\.[0-9]+$' || fail "bench_tensor.sh: no ratio in '$line'"
done
echo "repo/bench_scripts: ok"
