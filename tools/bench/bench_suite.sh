#!/usr/bin/env bash
# tools/bench/bench_suite.sh — suite loading speed: pg_suite_load_buffer (strict scan +
# validation + filling struct pg_suite) against its peers measured in the same run:
# cJSON alone, and Python's json.loads (C accelerated) on the same text. Then
# `phasegate list` on that suite written to a file: --format json against --format
# text (same load; the difference is the JSON writer). Prints MB/s and ratios.
#
#   tools/bench/bench_suite.sh [BUILD_DIR (build-bench)] [cases (20000)] [repeats (5)]
#
# Two views: warm (each peer repeated in one process) and cold (one run per fresh
# process, best of the repeats: what one `phasegate list` pays).
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
ninja -C "$BUILD" bench_suite phasegate >/dev/null
BENCH="$BUILD/tools/bench/bench_suite"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# The suite text, as bench_suite.c builds it (same bytes: the Python peer and the
# list timing read this file).
"$PY" - "$N" "$TMP/suite.json" <<'PYEOF'
import sys
n, out = int(sys.argv[1]), sys.argv[2]
lines = ['{"op": "attention", "total_modules": 3,', ' "cases": [']
for i in range(n):
    lines.append('  {"id": "case_%d", "level": %d, "shape": {"S": %d, "B": 1}, '
                 '"dtype": {"q": "float32"}, "fill": {"k": "normal(0, 1)"}, '
                 '"atol": 1e-4, "rtol": 1e-3, "seed": %d, "rule": "allclose", '
                 '"knob": [1, 2, {"x": true}]}%s' % (i, 1 + i % 5, 16 + i % 100, i,
                                                     "," if i + 1 < n else ""))
lines.append(' ]}')
open(out, "w").write("\n".join(lines) + "\n")
PYEOF

SIZE="$(wc -c <"$TMP/suite.json")"
MB="$(awk -v s="$SIZE" 'BEGIN{printf "%.2f", s/1e6}')"
PYPEER='
import json, sys, time
text = open(sys.argv[1]).read()
best = min((lambda t0: (json.loads(text), time.perf_counter() - t0)[1])(time.perf_counter())
           for _ in range(int(sys.argv[2])))
print("python_json %.6f %.1f" % (best, len(text) / 1e6 / best))'
sec() { awk -v k="$1" '$1 == k {print $2}' <<<"$2"; }
ratios() { # $1: the four result lines
  awk -v l="$(sec load "$1")" -v c="$(sec cjson "$1")" -v p="$(sec python_json "$1")" \
      -v s="$(sec scan "$1")" 'BEGIN {
    printf "ratio load/cjson %.2f\n", l / c
    printf "ratio load/python_json %.2f (below 1: phasegate is faster)\n", l / p
    printf "ratio scan/cjson %.2f\n", s / c }'
}

# Warm: every peer repeated in one process (allocator and caches warmed up).
echo "# $N cases, $MB MB — warm: best of $REPS in one process"
WARM="$("$BENCH" "$N" "$REPS" | grep -E '^(scan|cjson|load) ')
$("$PY" -c "$PYPEER" "$TMP/suite.json" "$REPS")"
echo "$WARM"
ratios "$WARM"

# Cold: one run per fresh process, best of $REPS processes — what a single
# `phasegate list` pays (first-touch page faults included, for every peer).
echo "# $N cases, $MB MB — cold: one run per process, best of $REPS processes"
best_of() { # command... -> the line with the smallest seconds
  for _ in $(seq "$REPS"); do "$@"; done | sort -k2,2g | head -1
}
COLD="$(best_of "$BENCH" "$N" 1 scan)
$(best_of "$BENCH" "$N" 1 cjson)
$(best_of "$BENCH" "$N" 1 load)
$(best_of "$PY" -c "$PYPEER" "$TMP/suite.json" 1)"
echo "$COLD"
ratios "$COLD"

# phasegate list on the same suite (attention contract: 3 phases, 3 tests a case).
CONTRACT="$ROOT/suites/attention/module_interfaces.yaml"
best_list() {
  local fmt="$1" best="" t0 t1 d
  for _ in $(seq "$REPS"); do
    t0="$(date +%s%N)"
    "$BUILD/runner/phasegate" list --contract "$CONTRACT" --suite "$TMP/suite.json" \
      --format "$fmt" >"$TMP/list.$fmt"
    t1="$(date +%s%N)"
    d=$(( (t1 - t0) / 1000 ))
    if [ -z "$best" ] || [ "$d" -lt "$best" ]; then best="$d"; fi
  done
  echo "$best"
}
LJ="$(best_list json)"
LT="$(best_list text)"
awk -v j="$LJ" -v t="$LT" -v b="$(wc -c <"$TMP/list.json")" 'BEGIN {
  printf "list_json %.4f %.1f\nlist_text %.4f\n", j / 1e6, b / j, t / 1e6
  printf "ratio list_json/list_text %.2f (whole process: contract + suite load + output)\n", j / t }'
