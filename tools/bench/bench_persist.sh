#!/bin/sh
# bench_persist.sh — what persistent impls buy (issue "Persistent impls"), each figure a
# ratio of two commands measured in the same run, medians of N runs:
#
#  1. attention M3, all 19 suite cases, mode sim, a torch impl
#     (suites/attention/impl/attention_torch.py, Debian python3-torch on the CPU):
#     `exec:` (a process per call) vs `worker:` (one process serves every call);
#     goal >= 10x. And `worker:` vs a peer written for the benchmark
#     (bench_persist_peer.py: one Python process, torch imported once, per case load
#     the inputs, compute the impl and a reference, allclose); goal within 1.3x. The same
#     `worker:` run as a phase run with the golden cache (issue 24): cold (an empty
#     cache, as on a CI run with a fresh build tree; suite strength not computed,
#     docs/runner.md "Suite strength") within 1.1x of the peer, and warm (goldens and
#     suite strength cached, as after the op's composition test) at or below 1.0x.
#  2. the plugin host vs --fresh-process with a plugin whose first call in a process
#     costs 200 ms (what a CUDA context costs), 19 cases; goal >= 10x.
#  3. the runner's own cost per persistent call around a no-op impl, 1 MiB in and out
#     (bench_persist binary; goal <= 2 ms), against memcpy of the same bytes: the plugin
#     host, the C worker (protocol v1: .npy files), and Python no-ops through `python:`
#     and the documented helper, each with worker protocol v1.1 (call memory; goal:
#     overhead <= 0.3 ms over the memcpy) and kept to v1 (PHASEGATE_WORKER_NO_SHM=1).
#
#   tools/bench/bench_persist.sh [BUILD_DIR (build/release)] [N (3)]
# Env: PYTHON (default /usr/bin/python3); PG_BENCH_NO_EXEC=1 leaves out the `exec:` run
# (19 Python starts: a minute on a loaded 2-core machine). Needs torch for part 1.
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
ratio2() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; }

echo "machine: $(nproc) cores; $n runs each, medians; load $(cut -d' ' -f1 /proc/loadavg)"
run() { "$pg" run --op-dir "$op" --up-to-module 3 --modes sim --no-golden-cache \
          --report "$work/r.json" "$@"; }
# a phase run with the golden cache in $work/cache: cold empties it first
# (with the golden library, as the CMake layer passes it: it is part of the cache key)
gl="$build/suites/attention/golden/libattention_golden.so"
cached() { PHASEGATE_CACHE_DIR="$work/cache" "$pg" run --op-dir "$op" --up-to-module 3 \
             --modes sim --golden-lib "$gl" --report "$work/r.json" "$@"; }
cold() { rm -rf "$work/cache"; cached "$@"; }

if "$py" -c 'import torch' 2>/dev/null; then
  torch_impl="$py $op/impl/attention_torch.py"
  for c in $cases; do "$pg" gen --op-dir "$op" --case "$c" --out "$work/in/$c" >/dev/null; done
  w=$(median_ms run --impl "worker:$torch_impl")
  grep -q "19 passed" "$work/last.txt" || { echo "worker run did not pass:"; tail -3 "$work/last.txt"; }
  e=
  [ "${PG_BENCH_NO_EXEC:-0}" = 1 ] || e=$(median_ms run --impl "exec:$torch_impl")
  p=$(median_ms "$py" "$root/tools/bench/bench_persist_peer.py" "$work/in" $cases)
  c=$(median_ms cold --impl "worker:$torch_impl")
  grep -q "19 passed" "$work/last.txt" || { echo "cold run did not pass:"; tail -3 "$work/last.txt"; }
  # warm: goldens and suite strength cached, as after the op's composition test
  PHASEGATE_CACHE_DIR="$work/cache" "$pg" selftest --op-dir "$op" --suite-strength \
    --golden-lib "$gl" >/dev/null 2>&1 || true
  cached --impl "worker:$torch_impl" >/dev/null 2>&1 || true
  wm=$(median_ms cached --impl "worker:$torch_impl")
  echo "1. attention M3, $ncases cases, torch on the CPU (sim):"
  if [ -n "$e" ]; then
    echo "   exec:   (a process per call)        $e ms"
    echo "   worker: (one process, every call)   $w ms   exec/worker $(ratio "$e" "$w")  (goal >= 10x)"
  else
    echo "   worker: (one process, every call)   $w ms   (exec: left out, PG_BENCH_NO_EXEC=1)"
  fi
  echo "   peer (torch loop, no phasegate)     $p ms   worker/peer $(ratio2 "$w" "$p")  (goal <= 1.3x)"
  echo "   worker:, cold golden cache          $c ms   cold/peer $(ratio2 "$c" "$p")  (goal <= 1.1x)"
  echo "   worker:, warm cache (+ strength)    $wm ms   warm/peer $(ratio2 "$wm" "$p")  (goal <= 1.0x)"
  grep -q "suite strength not computed" "$work/last.txt" && echo "   (the warm run found no suite strength in the cache)"
else
  echo "1. skipped: $py cannot import torch"
fi

# (no diagnosis: the no-op impl fails every precision case, and its counterfactual
# goldens would be most of both runs' time)
slow() { PG_BENCH_FIRST_CALL_MS=200 run --no-bisect --diagnose-budget 0 --impl "plugin:$noop" "$@"; }
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
