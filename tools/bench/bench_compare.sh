#!/usr/bin/env bash
# tools/bench/bench_compare.sh — throughput of a full pg_tensor_compare (verdict + every
# metric) of two fp32 tensors, against two peers measured in the same run:
#   (a) memcpy of the same bytes (both tensors; single-threaded and with as many threads
#       as the compare uses), and
#   (b) numpy: np.isclose/allclose plus the same metrics written with numpy.
# Prints GB/s (input bytes of both tensors / time, best of N) and the ratios, then one
# thread per dtype / data profile / SIMD kernel against memcpy measured in the same
# process (PG_BENCH_QUICK=1 skips that second part).
#
#   tools/bench/bench_compare.sh [BUILD_DIR (build-bench)] [MiB per tensor (256)] [repeats (5)]
#
# BUILD_DIR is configured as Release if it does not exist. Needs /usr/bin/python3 with
# numpy for peer (b) (skipped otherwise).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build-bench}"
MIB="${2:-256}"
REPS="${3:-5}"
PY="${PYTHON:-/usr/bin/python3}"

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPHASEGATE_BUILD_TESTS=OFF \
        -DPHASEGATE_BUILD_EXAMPLES=OFF >/dev/null
fi
ninja -C "$BUILD" bench_compare >/dev/null

echo "== phasegate compare: 2 x $MIB MiB float32, best of $REPS ($(nproc) cores visible)"
C_OUT="$("$BUILD/tools/bench/bench_compare" "$MIB" "$REPS" 0 float32)"
echo "$C_OUT"

NP_OUT=""
if "$PY" -c "import numpy" 2>/dev/null; then
  NP_OUT="$("$PY" - "$MIB" "$REPS" <<'EOF'
import sys, time
import numpy as np
mib, reps = int(sys.argv[1]), int(sys.argv[2])
n = mib * 2**20 // 4
rng = np.random.default_rng(42)
b = rng.uniform(-2, 2, n).astype(np.float32)
a = (b * (1 + rng.uniform(-1e-7, 1e-7, n))).astype(np.float32)
atol, rtol = 1e-5, 1.3e-6

def metrics(a, b):
    # what pg_tensor_compare reports, written the straightforward numpy way
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ok = np.isclose(a64, b64, rtol=rtol, atol=atol)
    allclose = bool(ok.all())
    mism = int((~ok).sum())
    fin = np.isfinite(a64) & np.isfinite(b64)
    d = np.abs(a64 - b64)[fin]
    amax = int(np.argmax(d))
    rel = d / (np.abs(b64[fin]) + 1e-8)
    rmax = int(np.argmax(rel))
    mean, rmse = d.mean(), np.sqrt((d * d).mean())
    cos = np.dot(a64, b64) / np.sqrt(np.dot(a64, a64) * np.dot(b64, b64))
    nans = np.isnan(a).sum(), np.isnan(b).sum()
    infs = np.isinf(a).sum(), np.isinf(b).sum()
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    oa = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ob = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    ulp = np.abs(oa - ob).max()
    bal = (int((a64 > b64).sum()) - int((a64 < b64).sum())) / n
    w3 = (rel <= 1e-3).mean()
    w53 = (rel <= 5e-3).mean()
    zeros = (b == 0).mean()
    return allclose, mism, amax, rmax, mean, rmse, cos, nans, infs, ulp, bal, w3, w53, zeros

best_all = best_close = 1e30
for _ in range(reps):
    t0 = time.perf_counter()
    np.allclose(a, b, rtol=rtol, atol=atol)
    t1 = time.perf_counter()
    metrics(a, b)
    t2 = time.perf_counter()
    best_close, best_all = min(best_close, t1 - t0), min(best_all, t2 - t1)
gb = 2 * n * 4 / 1e9
print("numpy_allclose_only %.4f %.2f" % (best_close, gb / best_close))
print("numpy_allclose_plus_metrics %.4f %.4f" % (best_all + best_close, gb / (best_all + best_close)))
EOF
)"
  echo "$NP_OUT"
fi

get() { awk -v k="$1" '$1 ~ k {print $3}' <<<"$C_OUT
$NP_OUT" | head -1; }
CMP="$(get '^compare_[0-9]+threads$')"
CMP1="$(get '^compare_1thread$')"
CPY1="$(get '^memcpy_1thread$')"
CPYN="$(get '^memcpy_[0-9]+threads$')"
echo "== ratios (higher is better for phasegate)"
awk -v c="$CMP" -v c1="$CMP1" -v m1="$CPY1" -v mn="$CPYN" 'BEGIN {
  printf "compare / memcpy (1 thread):          %.2f\n", c / m1;
  printf "compare / memcpy (same thread count): %.2f\n", c / mn;
  printf "compare 1 thread / memcpy 1 thread:   %.2f\n", c1 / m1 }'
if [ -n "$NP_OUT" ]; then
  NPA="$(get '^numpy_allclose_plus_metrics$')"
  NPC="$(get '^numpy_allclose_only$')"
  awk -v c="$CMP" -v a="$NPA" -v o="$NPC" 'BEGIN {
    printf "compare / numpy (allclose + metrics): %.1fx\n", c / a;
    printf "compare / numpy (allclose alone):     %.1fx\n", c / o }'
fi

[ "${PG_BENCH_QUICK:-0}" = 1 ] && exit 0
echo "== one thread: compare / memcpy of the same bytes (2 x $MIB MiB, best of $REPS)"
echo "   dtype     data   kernel   compare GB/s  memcpy GB/s  ratio"
one() { # dtype data simd-cap
  local out
  out="$(PHASEGATE_SIMD="$3" "$BUILD/tools/bench/bench_compare" "$MIB" "$REPS" 1 "$1" "$2")"
  awk -v d="$1" -v p="$2" -v k="$3" '$1 == "memcpy_1thread" {m = $3} $1 == "compare_1thread" {c = $3}
    END { printf "   %-9s %-6s %-8s %8.2f     %8.2f     %5.2f\n", d, p, k, c, m, c / m }' <<<"$out"
}
for simd in avx512 avx2; do
  for data in quiet mixed; do
    for dt in float32 float16 bfloat16; do one "$dt" "$data" "$simd"; done
  done
done
