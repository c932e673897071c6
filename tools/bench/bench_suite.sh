#!/usr/bin/env bash
# tools/bench/bench_suite.sh — suite loading speed: pg_suite_load_buffer (strict scan +
# cJSON + validation) against its peers measured in the same run: cJSON alone, and
# Python's json.loads (C accelerated) on the same text. Prints MB/s and ratios.
#
#   tools/bench/bench_suite.sh [BUILD_DIR (build-bench)] [cases (20000)] [repeats (5)]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build-bench}"
N="${2:-20000}"
REPS="${3:-5}"
PY="${PYTHON:-/usr/bin/python3}"

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPHASEGATE_BUILD_TESTS=OFF \
        -DPHASEGATE_BUILD_EXAMPLES=OFF >/dev/null
fi
ninja -C "$BUILD" bench_suite >/dev/null

OUT="$("$BUILD/tools/bench/bench_suite" "$N" "$REPS")"
echo "$OUT"
PYT="$("$PY" - "$N" "$REPS" <<'PYEOF'
import json, sys, time
n, reps = int(sys.argv[1]), int(sys.argv[2])
lines = ['{"op": "attention", "total_modules": 3,', ' "cases": [']
for i in range(n):
    lines.append('  {"id": "case_%d", "level": %d, "shape": {"S": %d, "B": 1}, '
                 '"dtype": {"q": "float32"}, "fill": {"k": "normal(0, 1)"}, '
                 '"atol": 1e-4, "rtol": 1e-3, "seed": %d, "rule": "allclose", '
                 '"knob": [1, 2, {"x": true}]}%s' % (i, 1 + i % 5, 16 + i % 100, i,
                                                     "," if i + 1 < n else ""))
lines.append(' ]}')
text = "\n".join(lines) + "\n"
best = min((lambda t0: (json.loads(text), time.perf_counter() - t0)[1])(time.perf_counter())
           for _ in range(reps))
print("python_json %.4f %.1f" % (best, len(text) / 1e6 / best))
PYEOF
)"
echo "$PYT"
LOAD="$(awk '$1 == "load" {print $2}' <<<"$OUT")"
PYS="$(awk '{print $2}' <<<"$PYT")"
awk -v l="$LOAD" -v p="$PYS" 'BEGIN { printf "ratio load/python_json %.2f (below 1: phasegate is faster)\n", l / p }'
