#!/bin/sh
# tools/bench/bench_matmul.sh — builds and runs bench_matmul: the `matmul` reference
# kernel (via the kernel table) with T threads vs raw OpenBLAS with T threads of its own
# on the same shapes, in the same run (wall-clock, GFLOP/s, time ratio), and checks that
# phasegate's bits are the same for every T.
#   tools/bench/bench_matmul.sh [BUILD_DIR] [--quick] [--f64] [--threads 1,2,4] [--reps N]
#                               [--only TEXT]
# BUILD_DIR defaults to ./build-bench (configured Release if missing).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build-bench}
case "$build" in --*) build=$root/build-bench ;; *) [ $# -gt 0 ] && shift ;; esac
if [ ! -f "$build/build.ninja" ] && [ ! -f "$build/Makefile" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPHASEGATE_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target bench_matmul -j 2 >/dev/null
echo "# OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-unset} OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}, $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$build/tools/bench/bench_matmul" "$@"
