#!/usr/bin/env bash
# tools/bench/bench_golden_cache.sh — what the golden cache's size cap adds to a store
# (bench_golden_cache.c): unlimited vs capped vs "rescan on every store", same run.
#
#   tools/bench/bench_golden_cache.sh [BUILD_DIR (build-bench)] [entries (300)] [CACHE_PARENT ($TMPDIR)]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build-bench}"
N="${2:-300}"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPHASEGATE_BUILD_TESTS=OFF \
        -DPHASEGATE_BUILD_EXAMPLES=OFF >/dev/null
fi
ninja -C "$BUILD" bench_golden_cache >/dev/null
TMP="$(mktemp -d "${3:-${TMPDIR:-/tmp}}/pg_cache_bench.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
"$BUILD/tools/bench/bench_golden_cache" "$TMP/cache" "$N"
