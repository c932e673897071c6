#!/usr/bin/env bash
# bench_cuda_attention.sh — the CUDA example impl (suites/attention/impl/attention_cuda.cu)
# on a GPU host: runs attention phases M1, M2, M3 over every case of the bundled suite in
# mode `cuda` and prints, from the evaluation reports, per case and phase the verdict,
# the impl call's wall time (device round trip inside the plugin host process: CUDA
# init, copies, kernels) and the case's total wall time, then per phase the run's wall
# time and the mean / median call time.
#
#   bash tools/bench/bench_cuda_attention.sh BUILD_DIR [extra phasegate run args…]
#
# From a fresh clone: when BUILD_DIR has no CMakeCache.txt it is configured first
# (Ninja if present, Release, PHASEGATE_WITH_CUDA=ON, tests off); then the phasegate CLI
# and the attention_cuda plugin are built. Needs the CUDA toolkit (nvcc), the
# bootstrap dependencies (tools/bootstrap.sh) and python3 to read the reports.
# Env: CUDA_ARCHS (default: the GPU's own, from nvidia-smi; else 80;90), PYTHON,
#      DEVICE_ID (default 0), TIMEOUT (per call, default 120), BENCH_NO_BUILD=1 (use
#      BUILD_DIR as it is: runner/phasegate and suites/attention/impl/libattention_cuda.so),
#      BENCH_REPORT_DIR (keep the three evaluation reports there, as M1.json … M3.json).
# Exit: 0 when every case passed, 1 when one failed, 77 when mode cuda was SKIPPED
# (no usable GPU), 2 for a setup problem.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: bash tools/bench/bench_cuda_attention.sh BUILD_DIR [run args…]" >&2; exit 2; }
build=$1
shift
py=${PYTHON:-python3}
device_id=${DEVICE_ID:-0}
timeout=${TIMEOUT:-120}

if [ "${BENCH_NO_BUILD:-0}" = 1 ]; then
  :   # prebuilt: BUILD_DIR/runner/phasegate and BUILD_DIR/suites/attention/impl/libattention_cuda.so
elif [ ! -f "$build/CMakeCache.txt" ]; then
  archs=${CUDA_ARCHS:-}
  if [ -z "$archs" ] && command -v nvidia-smi >/dev/null 2>&1; then
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')
    [ -n "$cap" ] && archs=$cap
  fi
  archs=${archs:-80;90}
  gen=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  echo "bench_cuda_attention: configuring $build (CUDA architectures $archs)"
  cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
        -DPHASEGATE_WITH_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$archs" >"$build.configure.log" 2>&1 \
    || { cat "$build.configure.log"; echo "bench_cuda_attention: configure failed" >&2; exit 2; }
fi
if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
  cmake --build "$build" --target phasegate attention_cuda >/dev/null \
    || { cmake --build "$build" --target phasegate attention_cuda; exit 2; }
fi
pg="$build/runner/phasegate"
plugin="$build/suites/attention/impl/libattention_cuda.so"
[ -x "$pg" ] && [ -f "$plugin" ] || { echo "bench_cuda_attention: $pg or $plugin missing" >&2; exit 2; }

command -v nvidia-smi >/dev/null 2>&1 \
  && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/GPU: /'
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
worst=0
for k in 1 2 3; do
  t0=$(date +%s.%N)
  set +e
  "$pg" run --op-dir "$root/suites/attention" --impl "plugin:$plugin" --modes cuda \
    --up-to-module "$k" --device-id "$device_id" --timeout "$timeout" \
    --report "$work/M$k.json" "$@" >"$work/M$k.console" 2>&1
  rc=$?
  set -e
  t1=$(date +%s.%N)
  echo "$t0 $t1 $rc" >"$work/M$k.wall"
  if [ "$rc" -eq 2 ] || [ ! -f "$work/M$k.json" ]; then
    cat "$work/M$k.console"; echo "bench_cuda_attention: phasegate run M$k: exit $rc" >&2; exit 2
  fi
  if [ "$rc" -eq 1 ]; then worst=1; cat "$work/M$k.console"; fi
  if [ "$rc" -eq 77 ] && [ "$worst" -eq 0 ]; then worst=77; fi
done

if [ -n "${BENCH_REPORT_DIR:-}" ]; then
  mkdir -p "$BENCH_REPORT_DIR" && cp "$work"/M?.json "$BENCH_REPORT_DIR"/
fi
"$py" - "$work" <<'PYEOF'
import json, os, statistics, sys
work = sys.argv[1]
reports, walls = {}, {}
for k in (1, 2, 3):
    with open(os.path.join(work, f"M{k}.json")) as f:
        reports[k] = json.load(f)
    t0, t1, rc = open(os.path.join(work, f"M{k}.wall")).read().split()
    walls[k] = (float(t1) - float(t0), int(rc))

def cuda_mode(check):
    for m in check.get("modes", []):
        if m.get("mode") == "cuda":
            return m
    return {}

cases = [c["id"] for c in reports[1]["checks"]]
shape = {c["id"]: c.get("knobs", {}).get("shape", {}) for c in reports[1]["checks"]}
print()
print(f"{'case':<24} {'shape':<22}" + "".join(f" {'M%d' % k:>7} {'call ms':>8} {'case ms':>8}" for k in (1, 2, 3)))
by = {k: {c["id"]: c for c in reports[k]["checks"]} for k in (1, 2, 3)}
for cid in cases:
    s = ",".join(f"{k}={v}" for k, v in shape[cid].items()) or "defaults"
    row = f"{cid:<24} {s:<22}"
    for k in (1, 2, 3):
        c = by[k].get(cid, {})
        m = cuda_mode(c)
        st = m.get("status", c.get("status", "-"))
        call = m.get("duration_ms")
        total = c.get("durations_ms", {}).get("total")
        row += f" {st:>7} {call if call is None else round(call, 2):>8} {total if total is None else round(total, 1):>8}"
    print(row)
    for k in (1, 2, 3):
        m = cuda_mode(by[k].get(cid, {}))
        if m.get("status") in ("FAIL", "ERROR"):
            print(f"    M{k}: {m.get('summary', '')}")
print()
for k in (1, 2, 3):
    skipped = [cuda_mode(c) for c in reports[k]["checks"] if cuda_mode(c).get("status") == "SKIPPED"]
    if skipped:
        why = (skipped[0].get("stdout") or skipped[0].get("summary") or "").strip().splitlines()
        print(f"M{k}: mode cuda SKIPPED in {len(skipped)} case(s): {why[-1] if why else '?'}")
for k in (1, 2, 3):
    r = reports[k]
    calls = [cuda_mode(c).get("duration_ms") for c in r["checks"]]
    calls = [x for x in calls if isinstance(x, (int, float))]
    wall, rc = walls[k]
    stat = f"mean call {statistics.mean(calls):.2f} ms, median {statistics.median(calls):.2f} ms, " \
           f"max {max(calls):.2f} ms over {len(calls)} calls" if calls else "no calls"
    print(f"M{k}: {r['status']:<7} per_mode_status {r['per_mode_status']}, "
          f"{r['cases_passed']}/{r['cases_total']} passed; run wall {wall:.2f} s (exit {rc}); {stat}")
PYEOF
exit "$worst"
