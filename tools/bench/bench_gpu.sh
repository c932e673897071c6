#!/bin/sh
# bench_gpu.sh — persistent impls on a real GPU host (issue "Persistent impls"), each
# figure a pair measured in the same run:
#  1. the bundled CUDA plugin (suites/attention/impl/attention_cuda.cu) on attention
#     M3, all suite cases, mode cuda: the plugin host (one CUDA context for the run)
#     vs --fresh-process (a context per call);
#  2. the torch impl (suites/attention/impl/attention_torch.py) in mode cuda:
#     worker: (torch imported and the context made once) over every case vs exec:
#     (a process per call) over the first 3 cases, compared per call;
#  3. the runner's own cost per persistent call around a no-op plugin host and worker,
#     and Python no-ops with worker protocol v1.1 (call memory) and v1 (files);
#  4. the pypto-style module (suites/attention/impl/attention_pypto.py) through the
#     python: adapter in mode cuda, per call, vs the same function called in-process on
#     the same tensors (tools/bench/bench_python_peer.py), and the run's wall time: with
#     worker protocol v1.1 (tensors in call memory, made torch tensors without a copy,
#     then moved to the GPU; the worker's trace counts the calls that used it; goal
#     within 2x of the in-process call) and, beside it, kept to v1 (files).
#
#   tools/bench/bench_gpu.sh [BUILD_DIR (build/release)]
# Env: PYTHON (default python3). Needs a CUDA device; prints SKIPPED lines otherwise.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
py=${PYTHON:-python3}
pg="$build/runner/phasegate"
cuda="$build/suites/attention/impl/libattention_cuda.so"
op="$root/suites/attention"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
run() { "$pg" run --op-dir "$op" --up-to-module 3 --modes cuda --no-golden-cache \
          --report "$work/r.json" "$@" > "$work/last.txt" 2>&1; }
tail_line() { grep '^\[phasegate\] attention' "$work/last.txt" | tail -1; }
n=$("$pg" list --op-dir "$op" --format json | grep -c '"phase":	1')
echo "host: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); $n cases"

echo "1. CUDA plugin, attention M3, mode cuda:"
t=$(date +%s%N); run --impl "plugin:$cuda"; h=$(ms "$t"); echo "   plugin host       $h ms  $(tail_line)"
t=$(date +%s%N); run --impl "plugin:$cuda" --fresh-process; f=$(ms "$t")
echo "   --fresh-process   $f ms  $(tail_line)"
awk -v a="$f" -v b="$h" 'BEGIN {printf "   fresh/host %.1fx\n", a / b}'

if "$py" -c 'import torch, numpy' 2>/dev/null; then
  impl="$py $op/impl/attention_torch.py"
  three=$("$pg" list --op-dir "$op" --format json | grep -o '"case":	"[^"]*"' | head -3 |
          sed 's/.*"\([^"]*\)"$/\1/' | paste -sd, -)
  echo "2. torch impl, attention M3, mode cuda:"
  t=$(date +%s%N); run --impl "worker:$impl"; w=$(ms "$t"); echo "   worker: $n cases   $w ms  $(tail_line)"
  t=$(date +%s%N); run --impl "exec:$impl" --case "$three"; e=$(ms "$t")
  echo "   exec: 3 cases     $e ms  $(tail_line)"
  awk -v e="$e" -v w="$w" -v n="$n" 'BEGIN {printf "   per case: exec %.0f ms, worker %.0f ms (start-up included): %.1fx\n", e / 3, w / n, (e / 3) / (w / n)}'
else
  echo "2. SKIPPED: $py cannot import torch and numpy"
fi
echo "3. runner cost per persistent call (no-op impl, 1 MiB in and out):"
nopy="$root/tools/bench/bench_noop_python.py"
PHASEGATE_PYTHON="$py" PHASEGATE_PLUGIN_HOST="$build/runner/phasegate-plugin-host" \
  "$build/tools/bench/bench_persist" "$build/tools/bench/libbench_noop_plugin.so" \
  "$build/tools/worker/pg_worker_c" 200 1 "python: v1.1 (call memory)|python:$nopy" \
  "python: v1 (files)|PHASEGATE_WORKER_NO_SHM=1 python:$nopy" | sed 's/^/   /'

if "$py" -c 'import torch, numpy' 2>/dev/null; then
  echo "4. python: adapter, attention M3, mode cuda (attention_pypto.py):"
  for path in v1.1 v1; do
    no_shm=0; [ "$path" = v1 ] && no_shm=1
    t=$(date +%s%N)
    PHASEGATE_WORKER_NO_SHM=$no_shm PG_EXEC_HELPER_TRACE=1 \
    "$pg" run --op-dir "$op" --up-to-module 3 --modes cuda --no-golden-cache --python "$py" \
      --impl "python:$op/impl/attention_pypto.py" --report "$work/py.json" \
      --save-data "$work/saved-$path" > "$work/last.txt" 2>&1
    p=$(ms "$t"); echo "   python: $n cases, protocol $path   $p ms  $(tail_line)"
    "$py" - "$work/py.json" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
modes = [m for c in r["checks"] for m in c.get("modes", []) if m.get("mode") == "cuda"]
calls = [m["duration_ms"] for m in modes]
starts = [m["startup_ms"] for m in modes if m.get("startup_ms")]
shm = sum("(call memory)" in (m.get("stdout") or "") for m in modes)
if calls:
    print(f"   phasegate: {len(calls)} calls ({shm} in call memory), median "
          f"{statistics.median(calls):.3f} ms per call (min {min(calls):.3f}); worker start "
          f"{sum(starts):.0f} ms once")
PY
  done
  "$py" "$root/tools/bench/bench_python_peer.py" "$op/impl/attention_pypto.py" \
    attention_module123_wrapper "$work/saved-v1.1" "${PEER_DEVICE:-cuda:0}" 5 | sed 's/^/   /'
else
  echo "4. SKIPPED: $py cannot import torch and numpy"
fi
