#!/usr/bin/env bash
# Cumulative-golden overhead benchmark: builds bench_golden (Release) and times
# pg_golden_cumulative for swiglu_ffn phase 1 against raw cblas_sgemm of the same
# shapes in the same run. Usage: tools/bench/bench_golden.sh [T D F] [REPS]
# Env: BUILD_DIR (default build-bench). Times are single-thread process CPU time
# (OPENBLAS_NUM_THREADS=1), robust to other load on the machine.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${BUILD_DIR:-$root/build-bench}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DPHASEGATE_BUILD_TESTS=OFF -DPHASEGATE_BUILD_EXAMPLES=OFF >/dev/null
fi
ninja -C "$build" bench_golden >/dev/null
exe="$(find "$build" -name bench_golden -type f -perm -u+x | head -n 1)"
OPENBLAS_NUM_THREADS=1 "$exe" "$root/suites/swiglu_ffn/module_interfaces.yaml" "$@"
