#!/bin/sh
# tools/bench/bench_matmul.sh — builds and runs bench_matmul: GFLOP/s of the `matmul`
# reference kernel (via the kernel table) vs raw cblas_sgemm on the same shapes, in
# the same run, and the kernel layer's overhead in percent.
#   tools/bench/bench_matmul.sh [BUILD_DIR] [--quick] [--f64]
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
echo "# OpenBLAS threads: ${OPENBLAS_NUM_THREADS:-default}, $(nproc) CPUs"
exec "$build/tools/bench/bench_matmul" "$@"
