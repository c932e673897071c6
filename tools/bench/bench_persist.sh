#!/bin/sh
# bench_persist.sh — what persistent impls buy (issue "Persistent impls"), each figure a
# ratio of two commands measured in the same run, medians of N runs:
#
#  1. attention M3, all 19 suite cases, mode sim, a torch impl
#     (suites/attention/impl/attention_torch.py, Debian python3-torch on the CPU):
#     `exec:` (a process per call) vs `worker:` (one process serves every call);
#     goal >= 10x. And `worker:` vs a peer written for the benchmark
#     (bench_persist_peer.py: one Python process, torch imported once, per case load
#     the inputs, compute the impl and a reference, allclose); goal within 1.3x.
#  2. the plugin host vs --fresh-process with a plugin whose first call in a process
#     costs 200 ms (what a CUDA context costs), 19 cases; goal >= 10x.
#  3. the runner's own cost per persistent call around a no-op impl, 1 MiB in and out
#     (bench_persist binary; goal <= 2 ms), against memcpy of the same bytes: the plugin
#     host, the C worker (protocol v1: .npy files), and Python no-ops through `python:`
#     and the documented helper, each with worker protocol v1.1 (call memory; goal:
#     overhead <= 0.3 ms over the memcpy) and kept to v1 (PHASEGATE_WORKER_NO_SHM=1).
#
#   tools/bench/bench_persist.sh [BUILD_DIR (build/release)] [N (3)]
# Env: PYTHON (default /usr/bin/python3). Needs torch for part 1 (skipped without).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
n=${2:-3}
py=${PYTHON:-/usr/bin/python3}
pg="$build/runner/phasegate"
noop="$build/tools/bench/libbench_noop_plugin.so"
[ -x "$pg" ] || { echo "bench_persist.sh: build phasegate first ($pg)"; exit 2; }
[ -f "$noop" ] || { echo "bench_persist.sh: build bench_noop_plugin first ($noop)"; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
op="$root/suites/attention"
cases=$("$pg" list --op-dir "$op" --format json | "$py" -c '
import json, sys
print(" ".join(t["case"] for t in json.load(sys.stdin)["tests"] if t["phase"] == 1))')
ncases=$(echo $cases | wc -w)

# median_ms CMD...: runs CMD n times (output to $work/last.txt), prints the median wall ms
median_ms() {
  i=0
  : > "$work/times"
  while [ $i -lt "$n" ]; do
    t0=$(date +%s%N)
    "$@" > "$work/last.txt" 2>&1 || true
    t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000000 )) >> "$work/times"
    i=$((i + 1))
  done
  sort -n "$work/times" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1fx", a / b}'; }

echo "machine: $(nproc) cores; $n runs each, medians; load $(cut -d' ' -f1 /proc/loadavg)"
run() { "$pg" run --op-dir "$op" --up-to-module 3 --modes sim --no-golden-cache \
          --report "$work/r.json" "$@"; }

if "$py" -c 'import torch' 2>/dev/null; then
  torch_impl="$py $op/impl/attention_torch.py"
  for c in $cases; do "$pg" gen --op-dir "$op" --case "$c" --out "$work/in/$c" >/dev/null; done
  w=$(median_ms run --impl "worker:$torch_impl")
  grep -q "19 passed" "$work/last.txt" || { echo "worker run did not pass:"; tail -3 "$work/last.txt"; }
  e=$(median_ms run --impl "exec:$torch_impl")
  p=$(median_ms "$py" "$root/tools/bench/bench_persist_peer.py" "$work/in" $cases)
  echo "1. attention M3, $ncases cases, torch on the CPU (sim):"
  echo "   exec:   (a process per call)        $e ms"
  echo "   worker: (one process, every call)   $w ms   exec/worker $(ratio "$e" "$w")  (goal >= 10x)"
  echo "   peer (torch loop, no phasegate)     $p ms   worker/peer $(ratio "$w" "$p")  (goal <= 1.3x)"
else
  echo "1. skipped: $py cannot import torch"
fi

slow() { PG_BENCH_FIRST_CALL_MS=200 run --no-bisect --impl "plugin:$noop" "$@"; }
h=$(median_ms slow)
f=$(median_ms slow --fresh-process)
echo "2. plugin with a 200 ms first call, $ncases cases:"
echo "   --fresh-process (fork per call)     $f ms"
echo "   plugin host (persistent)            $h ms   fresh/host $(ratio "$f" "$h")  (goal >= 10x)"

echo "3. runner cost per persistent call, no-op impl (goal <= 2 ms for 1 MiB; v1.1: <= +0.3 ms over memcpy):"
nopy="$root/tools/bench/bench_noop_python.py"
nohelp="$py $root/tools/bench/bench_noop_worker.py"
PHASEGATE_PYTHON="$py" PHASEGATE_PLUGIN_HOST="$build/runner/phasegate-plugin-host" \
  "$build/tools/bench/bench_persist" "$noop" "$build/tools/worker/pg_worker_c" 200 1 \
  "python: v1.1 (call memory)|python:$nopy" \
  "python: v1 (files)|PHASEGATE_WORKER_NO_SHM=1 python:$nopy" \
  "helper worker v1.1 (call memory)|worker:$nohelp" \
  "helper worker v1 (files)|PHASEGATE_WORKER_NO_SHM=1 worker:$nohelp" | sed 's/^/   /'
