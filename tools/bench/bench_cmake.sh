#!/usr/bin/env bash
# tools/bench/bench_cmake.sh — cost of the CMake integration at scale: a generated op
# with N case tests (3 phases, N/3 cases, default N=10000) is discovered with the fake
# runner (tests/cmake/fake_runner) and `ctest -N` is timed against two peers measured
# in the same run on the same machine:
#   bare   N add_test() calls, no properties at all (CTest's floor);
#   props  N add_test() + set_tests_properties(LABELS, SKIP_RETURN_CODE,
#          SKIP_REGULAR_EXPRESSION, TIMEOUT), the gtest_discover_tests shape, no gate.
# phasegate adds the phase gate (fixtures) on top of "props". Prints seconds (best of
# REPEATS) and ratios; also the discovery time (configure).
#
#   tools/bench/bench_cmake.sh [N (10000)] [REPEATS (3)]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
N="${1:-10000}"
REPS="${2:-3}"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
CASES=$(( (N + 2) / 3 ))

cc -O2 -o "$W/fake_phasegate" "$ROOT/tests/cmake/fake_runner/fake_phasegate.c"

# The op: contract + suite (only total_modules is read) + the canned listing.
mkdir -p "$W/op"
printf 'schema_version: 1\nop: bench\nmodules:\n  - id: 1\n  - id: 2\n  - id: 3\n' > "$W/op/module_interfaces.yaml"
echo '{"op": "bench", "total_modules": 3, "cases": []}' > "$W/op/adversarial_suite.json"
awk -v n="$CASES" -v f="$W/op/adversarial_suite.json" 'BEGIN {
  printf "{\"schema_version\": 1, \"op\": \"bench\", \"module_count\": 3, \"tests\": [\n";
  first = 1;
  for (p = 1; p <= 3; p++) for (i = 0; i < n; i++) {
    lv = 1 + i % 5; c = sprintf("L%d_case_%d", lv, i);
    printf "%s  {\"name\": \"bench/M%d/L%d/%s\", \"op\": \"bench\", \"phase\": %d, \"suffix\": \"%s\", \"level\": %d, \"case\": \"%s\", \"labels\": [\"phasegate\", \"op_bench\", \"phase_M%d\", \"level_L%d\"], \"file\": \"%s\", \"line\": %d, \"precision\": true}",
      (first ? "" : ",\n"), p, lv, c, p, substr("123", 1, p), lv, c, p, lv, f, i + 4;
    first = 0;
  }
  printf "\n]}\n";
}' > "$W/op/fake_list.json"

mkdir -p "$W/pg" "$W/bare" "$W/props"
cat > "$W/pg/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(bench_pg LANGUAGES NONE)
enable_testing()
include("$ROOT/cmake/PhaseGate.cmake")
add_library(impl SHARED IMPORTED)
set_target_properties(impl PROPERTIES IMPORTED_LOCATION /nonexistent/libimpl.so)
phasegate_add_op(bench OP_DIR "$W/op" IMPL impl RUNNER "$W/fake_phasegate" MODES sim npu TIMEOUT 60)
CM
cat > "$W/bare/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(bench_bare LANGUAGES NONE)
enable_testing()
foreach(p 1 2 3)
  math(EXPR last "$CASES - 1")
  foreach(i RANGE \${last})
    add_test(NAME bench/M\${p}/L1/L1_case_\${i} COMMAND "$W/fake_phasegate" run --case L1_case_\${i})
  endforeach()
endforeach()
CM
cat > "$W/props/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(bench_props LANGUAGES NONE)
enable_testing()
foreach(p 1 2 3)
  math(EXPR last "$CASES - 1")
  foreach(i RANGE \${last})
    add_test(NAME bench/M\${p}/L1/L1_case_\${i} COMMAND "$W/fake_phasegate" run --case L1_case_\${i})
    set_tests_properties(bench/M\${p}/L1/L1_case_\${i} PROPERTIES
      LABELS "phasegate;op_bench;phase_M\${p};level_L1" SKIP_RETURN_CODE 77
      SKIP_REGULAR_EXPRESSION "\\\\[phasegate\\\\] SKIPPED" TIMEOUT 180)
  endforeach()
endforeach()
CM

now() { date +%s.%N; }
# best(): "wall cpu" seconds, the best of REPEATS runs of "$@" (cpu = user + sys, the
# figure that does not depend on how loaded the machine is).
best() {
  local bw="" bc=""
  for _ in $(seq "$REPS"); do
    local t0 t1 cpu
    t0=$(now)
    /usr/bin/time -f "%U %S" -o "$W/time" "$@" >/dev/null 2>&1 || true
    cpu=$(tail -n1 "$W/time" | awk '{print $1 + $2}')
    t1=$(now)
    bw=$(awk -v a="$bw" -v t="$(awk -v x="$t0" -v y="$t1" 'BEGIN{print y-x}')" 'BEGIN{ if (a == "" || t < a) print t; else print a }')
    bc=$(awk -v a="$bc" -v t="$cpu" 'BEGIN{ if (a == "" || t < a) print t; else print a }')
  done
  echo "$bw $bc"
}
w() { echo "$1"; }
c() { echo "$2"; }

t0=$(now); cmake -S "$W/pg" -B "$W/pg/b" -G Ninja >/dev/null; t1=$(now)
DISC=$(awk -v x="$t0" -v y="$t1" 'BEGIN{printf "%.2f", y-x}')
cmake -S "$W/bare" -B "$W/bare/b" -G Ninja >/dev/null
cmake -S "$W/props" -B "$W/props/b" -G Ninja >/dev/null

COUNT=$(ctest --test-dir "$W/pg/b" -N | awk '/Total Tests/ {print $3}')
T_PG=$(best ctest --test-dir "$W/pg/b" -N)
T_PG3=$(best ctest --test-dir "$W/pg/b" -N -L phase_M3)
T_JSON=$(best ctest --test-dir "$W/pg/b" --show-only=json-v1)
T_BARE=$(best ctest --test-dir "$W/bare/b" -N)
T_PROPS=$(best ctest --test-dir "$W/props/b" -N)

echo "ctest with $COUNT phasegate tests ($CASES cases x 3 phases + contract, composition, gates), best of $REPS, wall / cpu seconds:"
printf '  configure + discovery (phasegate list + parse + write): %6.2f s wall\n' "$DISC"
printf '  ctest -N                  phasegate %5.2f / %5.2f   bare %5.2f / %5.2f   props %5.2f / %5.2f\n' \
  $(w $T_PG) $(c $T_PG) $(w $T_BARE) $(c $T_BARE) $(w $T_PROPS) $(c $T_PROPS)
printf '  ctest -N -L phase_M3      phasegate %5.2f / %5.2f\n' $(w $T_PG3) $(c $T_PG3)
printf '  ctest --show-only=json-v1 phasegate %5.2f / %5.2f\n' $(w $T_JSON) $(c $T_JSON)
awk -v a="$(c $T_PG)" -v b="$(c $T_BARE)" -v d="$(c $T_PROPS)" \
  'BEGIN { printf "  ratio ctest -N (cpu): phasegate/bare %.2fx, phasegate/props %.2fx\n", a/b, a/d }'
