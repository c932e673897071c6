#!/bin/sh
# bench_ctest_worker.sh — the persistent torch impl through CTest (issue "Persistent
# impls": `ctest -L phase_M3 -j2` with IMPL_WORKER within 2x of the standalone worker
# runs of M1..M3), measured in the same run, medians of N:
#   standalone: phasegate run --impl worker:… --up-to-module k, k = 1, 2, 3 (each run
#               starts its own worker: three torch start-ups);
#   ctest:      ctest -L phase_M3 -R '^attention_torch/' -j2 — the gate pulls M1 and M2
#               in, one test per (phase, case), the attention_torch/workers fixture keeps
#               one warm worker for all of them (`phasegate serve`).
#   tools/bench/bench_ctest_worker.sh [BUILD_DIR (build/release)] [N (3)]
# Needs the attention_torch op registered (a Python with torch at configure time).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
n=${2:-3}
pg="$build/runner/phasegate"
py=$(sed -n 's/^PHASEGATE_TORCH_PYTHON:STRING=//p' "$build/CMakeCache.txt")
[ -n "$py" ] || { echo "bench_ctest_worker.sh: attention_torch is not registered in $build"; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
impl="worker:$py $root/suites/attention/impl/attention_torch.py"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
standalone() {
  for k in 1 2 3; do
    "$pg" run --op-dir "$root/suites/attention" --impl "$impl" --up-to-module "$k" \
      --golden-lib "$build/suites/attention/golden/libattention_golden.so" \
      --report-dir "$work/reports" >> "$work/standalone.txt" 2>&1 || true
  done
}
i=0
: > "$work/s"; : > "$work/c"
while [ $i -lt "$n" ]; do
  t0=$(date +%s%N); standalone; t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000000 )) >> "$work/s"
  t0=$(date +%s%N)
  ctest --test-dir "$build" -L phase_M3 -R '^attention_torch/' -j2 > "$work/ctest.txt" 2>&1 || true
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000000 )) >> "$work/c"
  i=$((i + 1))
done
s=$(median < "$work/s"); c=$(median < "$work/c")
echo "machine: $(nproc) cores; $n runs each, medians; load $(cut -d' ' -f1 /proc/loadavg)"
echo "standalone worker runs of M1, M2, M3 (3 starts):  $s ms"
echo "ctest -L phase_M3 -j2 (gate: M1, M2, M3; 1 warm worker): $c ms  $(grep 'tests passed' "$work/ctest.txt")"
awk -v c="$c" -v s="$s" 'BEGIN {printf "ctest/standalone %.2fx (goal <= 2x)\n", c / s}'
