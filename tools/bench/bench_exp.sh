#!/bin/sh
# bench_exp.sh — the exp-heavy fp32 reference kernels (softmax, log_softmax, exp,
# sigmoid, silu, gelu-tanh) through the kernel table vs a plain libm loop doing the
# same math, in the same run (see bench_exp.c). Compiles bench_exp.c against the
# goldens library of an existing build (Release recommended).
#   tools/bench/bench_exp.sh [BUILD_DIR] [REPS]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
reps=${2:-40}
lib="$build/goldens/libphasegate_goldens.a"
[ -f "$lib" ] || { echo "bench_exp.sh: build phasegate_goldens first ($lib)"; exit 2; }
exe=$(mktemp)
trap 'rm -f "$exe"' EXIT
${CC:-cc} -std=c11 -O2 -I "$root/include" "$root/tools/bench/bench_exp.c" "$lib" \
  -lm -lpthread -ldl -o "$exe"
"$exe" "$reps"
