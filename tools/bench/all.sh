#!/bin/sh
# tools/bench/all.sh — every benchmark of tools/bench/ (and the `phasegate serve` load
# test) in one run, and one table: the README's "Measured" table is this script's output
# (each row: what, phasegate, its peer measured in the same run, the ratio, the goal, and
# the load average when that benchmark started). A load average above the core count
# means other work shared the cores: that row's wall-clock figures are marked "under
# load" (CPU-time figures and ratios of interleaved runs suffer less).
#
#   tools/bench/all.sh [BUILD_DIR (build/release)] [OUT_DIR (new temp dir)]
#
# BUILD_DIR is configured (Release, tests off) and built when it has no build.ninja.
# Every script's own output is kept in OUT_DIR/<name>.txt, the table in OUT_DIR/table.md.
# Fast settings by default (a few minutes on 2 cores): 64 MiB compare tensors, 3 runs of
# each persistent-impl figure, no `exec:` torch run (19 Python starts), 2000 registered
# tests for the CMake figure, the short serve load. PG_BENCH_FULL=1 takes the settings the
# docs quote (256 MiB, the exec: run, 10 000 tests, 8 clients x 500 calls; ~15 minutes).
# GPU rows run only where nvidia-smi sees a device (tools/bench/bench_gpu.sh).
# Env: PYTHON (default /usr/bin/python3).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
out=${2:-$(mktemp -d "${TMPDIR:-/tmp}/pg_bench_all.XXXXXX")}
py=${PYTHON:-/usr/bin/python3}
full=${PG_BENCH_FULL:-0}
cores=$(nproc)
mkdir -p "$out"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPHASEGATE_BUILD_TESTS=OFF \
    >"$out/configure.txt" 2>&1 || { echo "all.sh: configure failed: $out/configure.txt"; exit 2; }
fi
cmake --build "$build" -j "$cores" >"$out/build.txt" 2>&1 ||
  { echo "all.sh: build failed: $out/build.txt"; exit 2; }
build=$(cd "$build" && pwd) # the serve load test runs from other directories
pg="$build/runner/phasegate"
if [ "$full" = 1 ]; then
  mib=256 persist_n=3 cmake_n=10000 serve_args="" no_exec=0 errmap_reps=3
else
  mib=64 persist_n=3 cmake_n=2000 serve_args="--short" no_exec=1 errmap_reps=1
fi

table="$out/table.md"
: >"$table"
# bench NAME CMD...: runs one benchmark, its output to $out/NAME.txt, its start load kept
bench() {
  name=$1
  shift
  [ "${PG_BENCH_TABLE_ONLY:-0}" = 1 ] && return 0 # the table again from OUT_DIR's outputs
  cut -d' ' -f1 /proc/loadavg >"$out/$name.load"
  echo "all.sh: $name ($(cat "$out/$name.load") load) ..." >&2
  t0=$(date +%s)
  "$@" >"$out/$name.txt" 2>&1
  echo "$? $(($(date +%s) - t0))" >"$out/$name.status"
}
# load NAME: the load column ("3.1", or "**9.8: under load**" above the core count)
load() {
  awk -v l="$(cat "$out/$1.load")" -v c="$cores" \
    'BEGIN {if (l + 0 > c + 0) printf "**%s: under load**", l; else printf "%s", l}'
}
row() { printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$5" "$6" >>"$table"; }
# field NAME REGEX N: field N of the first line of NAME's output matching REGEX
field() { awk -v re="$2" -v n="$3" '$0 ~ re {print $n; exit}' "$out/$1.txt"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b + 0 > 0) printf "%.2f", a / b; else printf "?"}'; }
failed() { [ "$(cut -d' ' -f1 "$out/$1.status")" != 0 ]; }
note_failed() { row "$1 (\`$2\`)" "failed: see $out/$3.txt" "" "" "" "$(load "$3")"; }

# ---- 1. compare
bench compare "$root/tools/bench/bench_compare.sh" "$build" "$mib" 3
if failed compare; then note_failed "compare" bench_compare.sh compare; else
  c1=$(field compare '^compare_1thread ' 3) m1=$(field compare '^memcpy_1thread ' 3)
  row "compare two $mib MiB fp32 tensors, verdict + all metrics, 1 thread (\`bench_compare.sh\`)" \
    "$c1 GB/s" "memcpy, 1 thread, $m1 GB/s" "$(ratio "$c1" "$m1") of memcpy" "≥ 0.7" "$(load compare)"
  row "same" "" "numpy \`isclose\` + the same metrics" \
    "$(awk -F': *' '/numpy \(allclose \+ metrics\)/ {print $2; exit}' "$out/compare.txt") faster" "≥ 5×" \
    "$(load compare)"
  row "same" "" "numpy bare \`allclose\` (no metrics)" \
    "$(awk -F': *' '/numpy \(allclose alone\)/ {print $2; exit}' "$out/compare.txt") faster" "" "$(load compare)"
fi

# ---- 2. golden, 3. matmul
BUILD_DIR="$build" bench golden "$root/tools/bench/bench_golden.sh"
if failed golden; then note_failed "cumulative golden" bench_golden.sh golden; else
  g=$(field golden 'pg_golden_cumulative' 2) r=$(field golden 'raw sgemm x2, fresh outputs' 6)
  row "cumulative golden, swiglu phase 1, 8.6 GFLOP, 1 thread (\`bench_golden.sh\`)" \
    "$g ms, $(field golden 'pg_golden_cumulative' 4) GFLOP/s (fp32 inputs)" \
    "raw \`cblas_sgemm\` ×2, fresh outputs, $r ms" "$(ratio "$g" "$r") of raw time" \
    "≤ 5 % overhead" "$(load golden)"
fi
bench matmul "$root/tools/bench/bench_matmul.sh" "$build" --quick
if failed matmul; then note_failed "matmul" bench_matmul.sh matmul; else
  line=$(grep -m1 '1024\] x \[1024,1024\] *float32 T=1 ' "$out/matmul.txt")
  row "matmul via the kernel table, bits the same for any thread count (\`bench_matmul.sh --quick\`), 1024³ fp32, 1 thread" \
    "$(echo "$line" | awk '{print $9 " GFLOP/s (" $7 " ms)"}')" \
    "raw OpenBLAS, same threads: $(echo "$line" | awk '{print $14 " GFLOP/s (" $12 " ms)"}')" \
    "$(echo "$line" | awk '{print $17 "× wall, " $25 "× CPU"}')" \
    "same bits for any thread count: $(grep -q 'bits vs T=1: same' "$out/matmul.txt" && echo met || echo NOT met)" \
    "$(load matmul)"
fi

# ---- 4. tensor fills and .npy
bench tensor "$root/tools/bench/bench_tensor.sh" "$build"
if failed tensor; then note_failed "tensor" bench_tensor.sh tensor; else
  for what in "normal  float32  1 thread:normal fill fp32, 1 thread (\`bench_tensor.sh\`):numpy \`standard_normal\`" \
              "uniform float32  1 thread:uniform fill fp32, 1 thread:numpy \`random\`"; do
    re=${what%%:*} rest=${what#*:} label=${rest%%:*} peer=${rest#*:}
    line=$(grep -m1 "fill $re" "$out/tensor.txt")
    row "$label" "$(echo "$line" | awk '{print $6, $7}')" \
      "$peer $(echo "$line" | awk '{for (i = 8; i < NF; i++) if ($(i + 1) == "GB/s") print $i}') GB/s" \
      "$(echo "$line" | awk '{print $NF}')×" "" "$(load tensor)"
  done
  line=$(grep -m1 'npy read  into memory' "$out/tensor.txt")
  row "\`.npy\` read, warm cache" "$(echo "$line" | awk '{print $5, $6}')" \
    "\`numpy.load\` $(echo "$line" | awk '{print $8}') GB/s" "$(echo "$line" | awk '{print $NF}')×" "" \
    "$(load tensor)"
fi

# ---- 5. contract, 6. suite
bench contract "$root/tools/bench/bench_contract.sh" "$build" 100
if failed contract; then note_failed "contract" bench_contract.sh contract; else
  row "contract load + validate, 100 modules (\`bench_contract.sh\`)" \
    "$(field contract 'phasegate load' 3) ms" "PyYAML CSafeLoader (no validation)" \
    "$(field contract 'CSafeLoader' 7) faster" "" "$(load contract)"
fi
bench suite "$root/tools/bench/bench_suite.sh" "$build" 20000 3
if failed suite; then note_failed "suite" bench_suite.sh suite; else
  ms=$(awk '/^load / {printf "%.0f", $2 * 1000; exit}' "$out/suite.txt")
  row "suite load + validate, 20 000 cases, 4.3 MB (\`bench_suite.sh\`)" "$ms ms" \
    "cJSON parse alone; Python \`json.loads\`" \
    "$(field suite 'ratio load/cjson' 3)× of cJSON, $(field suite 'ratio load/python_json' 3)× of \`json.loads\`" \
    "" "$(load suite)"
fi

# ---- 7. one case end to end
bench run "$root/tools/bench/bench_run.sh" "$build" 21
if failed run; then note_failed "one case end to end" bench_run.sh run; else
  row "one case end to end, attention M3, as a process (\`bench_run.sh\`)" \
    "$(field run 'phasegate run \(C' 7) ms wall" \
    "Python + numpy doing the same steps, $(field run 'peer script' 6) ms" \
    "$(field run 'ratio \(peer' 5) faster (CPU $(field run 'ratio \(peer' 6))" "≥ 20×" "$(load run)"
  row "same run through the plugin host vs \`--fresh-process\` (a fork per call, as before the host)" \
    "host $(field run 'phasegate run \(C' 7) ms wall, $(field run 'phasegate run \(C' 8) ms CPU" \
    "\`--fresh-process\` $(field run 'run --fresh-process' 4) ms wall, $(field run 'run --fresh-process' 5) ms CPU" \
    "$(field run 'plugin host /' 5) wall, $(field run 'plugin host /' 6) CPU" "≤ 1.0×" "$(load run)"
fi

# ---- 8. persistent impls
PG_BENCH_NO_EXEC=$no_exec bench persist "$root/tools/bench/bench_persist.sh" "$build" "$persist_n"
if failed persist; then note_failed "persistent impls" bench_persist.sh persist; else
  w=$(field persist 'worker: \(one process' 6) e=$(field persist 'exec: +\(a process' 6)
  p=$(field persist 'peer \(torch loop' 6)
  if [ -n "$e" ]; then
    row "attention M3, 19 cases, torch impl on the CPU: \`worker:\` vs \`exec:\` (\`bench_persist.sh\`)" \
      "$w ms" "\`exec:\` $e ms" "$(ratio "$e" "$w")× faster" "≥ 10×" "$(load persist)"
  else
    row "attention M3, 19 cases, torch impl on the CPU: \`worker:\` vs \`exec:\` (\`bench_persist.sh\`)" \
      "$w ms" "not run (fast settings; PG_BENCH_FULL=1)" "" "≥ 10×" "$(load persist)"
  fi
  row "same, \`worker:\` (no golden cache) vs a torch loop written for the benchmark (no phasegate)" \
    "$w ms" "$p ms" "$(ratio "$w" "$p")× of the peer" "≤ 1.3×" "$(load persist)"
  row "same, a phase run on a cold golden cache (suite strength not computed: docs/runner.md)" \
    "$(field persist 'cold golden cache' 5) ms" "$p ms" "$(field persist 'cold/peer' 8) of the peer" \
    "≤ 1.1×" "$(load persist)"
  row "same, warm cache (goldens and suite strength read from it)" \
    "$(field persist 'warm cache \(\+ strength\)' 6) ms" "$p ms" "$(field persist 'warm/peer' 9) of the peer" \
    "≤ 1.0×" "$(load persist)"
  h=$(field persist 'plugin host \(persistent\)' 4) f=$(field persist '--fresh-process \(fork' 5)
  row "plugin whose first call costs 200 ms, 19 cases: plugin host vs \`--fresh-process\`" \
    "$h ms" "$f ms" "$(ratio "$f" "$h")× faster" "≥ 10×" "$(load persist)"
  row "runner cost per persistent call, no-op impl, 1 MiB in + out (\`bench_persist\`)" \
    "plugin host $(field persist 'plugin host, per call' 5) ms, worker $(field persist 'worker, per call' 4) ms" \
    "memcpy in + out $(field persist 'memcpy in \+ out' 6) ms" \
    "$(grep -m1 'plugin host, per call' "$out/persist.txt" | grep -o '[0-9.]*x memcpy') / $(grep -m1 'worker, per call' "$out/persist.txt" | grep -o '[0-9.]*x memcpy')" "≤ 2 ms" \
    "$(load persist)"
fi

# ---- 9. CTest with a worker impl
bench ctest_worker "$root/tools/bench/bench_ctest_worker.sh" "$build" 1
if failed ctest_worker; then note_failed "ctest worker" bench_ctest_worker.sh ctest_worker; else
  ms_of() { awk -v re="$1" '$0 ~ re {for (i = 2; i <= NF; i++) if ($i == "ms") {print $(i - 1); exit}}' \
             "$out/ctest_worker.txt"; }
  row "\`ctest -L phase_M3 -j2\`, torch \`IMPL_WORKER\` (M1..M3 through the gate) (\`bench_ctest_worker.sh\`)" \
    "$(ms_of '^ctest -L') ms" "standalone worker runs of M1, M2, M3: $(ms_of '^standalone') ms" \
    "$(field ctest_worker '^ctest/standalone' 2)" "≤ 2×" "$(load ctest_worker)"
fi

# ---- 10. GPU (only where a device is visible)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  bench gpu "$root/tools/bench/bench_gpu.sh" "$build"
  row "**$(nvidia-smi -L | head -1 | cut -d'(' -f1)**: \`bench_gpu.sh\`" "see $out/gpu.txt" "" "" "" "$(load gpu)"
else
  row "GPU rows (\`bench_gpu.sh\`)" "not run: no GPU visible here" "" "" "" ""
fi

# ---- 11. diagnosis, 12. error map
bench diagnosis "$root/tools/bench/bench_diagnosis.sh" "$build" 1
if failed diagnosis; then note_failed "diagnosis" bench_diagnosis.sh diagnosis; else
  dl=$(grep -m1 '^  diag  wall' "$out/diagnosis.txt") ol=$(grep -m1 '^  off   wall' "$out/diagnosis.txt")
  row "diagnosis of a failing case, 2 × 256 MiB fp32 outputs, a bug in each (\`bench_diagnosis.sh\`)" \
    "$(echo "$dl" | awk '{print $3}') s wall, default budget" \
    "the same run with \`--diagnose-budget 0\`: $(echo "$ol" | awk '{print $3}') s; numpy allclose over the same bytes: $(awk '/allclose-style compare/ {for (i = 1; i <= NF; i++) if ($i == "compare") print $(i + 1); exit}' "$out/diagnosis.txt") ms" \
    "$(field diagnosis '^  diag: ' 2) the run without diagnosis" "≤ 5×" "$(load diagnosis)"
fi
bench errmap "$build/tools/bench/bench_errmap" 256 "$errmap_reps"
if failed errmap; then note_failed "error map" bench_errmap errmap; else
  row "error map + \\|golden\\| histogram of a failing fp32 [8192, 8192] output, 1 thread CPU time (\`bench_errmap\`)" \
    "$(field errmap '^cpu_error_map_1thread' 2) s" \
    "the compare pass (verdict + metrics) $(field errmap '^cpu_compare_1thread' 2) s; the mismatch mask $(field errmap '^cpu_mask_1thread' 2) s" \
    "$(field errmap '^error_map / compare' 7)× the compare pass, $(field errmap '^error_map / mask' 7)× the mask" "" \
    "$(load errmap)"
fi

# ---- 13. the HTML report over the reports the benchmarks above left in the build tree
reports=$(find "$build" -name evaluation_report.json 2>/dev/null | wc -l)
bench report sh -c "/usr/bin/time -f '%U %S %e' '$pg' report --out '$out/report.html' '$build' 2>&1"
row "\`phasegate report\` over BUILD_DIR, $reports reports, $(($(wc -c <"$out/report.html" 2>/dev/null || echo 0) / 1024)) KiB page" \
  "$(tail -1 "$out/report.txt" | awk '{printf "%.2f s CPU", $1 + $2}')" "" "" "" "$(load report)"

# ---- 14. phasegate serve under load
bench serve "$root/tools/stress/serve_load.sh" --build "$build" $serve_args
for impl in plugin worker; do
  line=$(awk -v i="$impl" '$2 == i && $3 == "api" && $4 !~ /crash/ {print; exit}' "$out/serve.txt")
  row "\`phasegate serve\` clients × calls, no-op \`$impl:\` (\`tools/stress/serve_load.sh $serve_args\`)" \
    "$(echo "$line" | grep -o 'calls_per_s=[^ ]*') $(echo "$line" | grep -o 'p99_ms=[^ ]*')" \
    "no peer in that run" "" "0 lost:$(echo "$line" | grep -o ' lost=[^ ]*') ($(echo "$line" | cut -c1-4 | tr -d ' '))" \
    "$(load serve)"
done

# ---- 14b. the fleet: shard plan quality and merge (docs/fleet.md)
bench shard "$root/tools/bench/bench_shard.sh" "$build"
if failed shard; then note_failed "shard plan / merge" bench_shard.sh shard; else
  plan16=$(awk '$1 == 16 {print $2; exit}' "$out/shard.txt")
  stride16=$(awk '$1 == 16 {print $3; exit}' "$out/shard.txt")
  row "\`phasegate shard plan\`, 10 000 tests with skewed durations, 16 shards: longest shard / mean (\`bench_shard.sh\`)" \
    "$plan16" "\`ctest -I k,,16\` stride: $stride16" "" "reach the bound the longest test sets" "$(load shard)"
  row "\`phasegate merge\`, 64 shard directories × 1 000 cases (\`bench_shard.sh\`)" \
    "$(sed -n 's/.*phasegate merge ([^)]*): \([0-9.]*\) s.*/\1/p' "$out/shard.txt") s CPU" \
    "Python only reading the same files: $(sed -n 's/.*peer: Python reading the same files, one JUnit file: \([0-9.]*\) s.*/\1/p' "$out/shard.txt") s CPU" \
    "$(sed -n 's/.*ratio: \([0-9.]*\) x.*/\1/p' "$out/shard.txt")× the peer" "" "$(load shard)"
fi

# ---- 15. CMake at scale
bench cmake "$root/tools/bench/bench_cmake.sh" "$cmake_n" 1
if failed cmake; then note_failed "ctest -N" bench_cmake.sh cmake; else
  line=$(grep -m1 '^  ctest -N  ' "$out/cmake.txt")
  row "\`ctest -N\` with $(awk '/^ctest with/ {print $3; exit}' "$out/cmake.txt") registered tests (\`bench_cmake.sh\`)" \
    "$(echo "$line" | awk '{print $4 " s wall, " $6 " s CPU"}')" \
    "plain \`add_test\` + 4 properties: $(echo "$line" | awk '{print $12 " s wall, " $14 " s CPU"}')" \
    "$(awk '/phasegate\/props/ {print $NF " CPU"; exit}' "$out/cmake.txt")" "< 2 s for 10 000" "$(load cmake)"
fi

{
  echo "tools/bench/all.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $cores cores, commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null), $( [ "$full" = 1 ] && echo full || echo fast) settings; outputs in $out"
  echo
  echo "| what | phasegate | peer (same run) | ratio | goal | load at start |"
  echo "|---|---|---|---|---|---|"
  cat "$table"
} >"$out/table.out"
mv "$out/table.out" "$table"
cat "$table"
