#!/bin/sh
# bench_diagnosis_attention.sh — what the counterfactual goldens of issue 23 add to
# diagnosing a failing attention-like case (docs/diagnosis.md "Counterfactual goldens"):
# one module of built-in steps, s = matmul(q, k, trans_b, alpha=1/sqrt(D)), p =
# softmax(s), out = matmul(p, v), B = 1, H = 4, S = 256, D = 64, fp32; a numpy impl with
# a bug: P.V with a bf16 accumulator per chunk of 32 (what the new mutants name), or the
# output negated (where they are only overhead). Runs, alternated N times each, medians
# of durations_ms.diagnosis and of the wall time:
#   off    --diagnose-budget 0 (the peer: the same case without diagnosis)
#   full   --diagnose-budget 600 (every mutant)
#   dflt   the default budget (4 x the case's own time, 2..30 s)
# and, when BASE_PHASEGATE is given (a phasegate built before these mutants), the same
# full and dflt runs with it: the ratio new / base is the added diagnosis time.
#
#   tools/bench/bench_diagnosis_attention.sh [BUILD_DIR] [N] [BASE_PHASEGATE]
# Env: PYTHON (default /usr/bin/python3).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
n=${2:-3}
base=${3:-}
py=${PYTHON:-/usr/bin/python3}
pg="$build/runner/phasegate"
[ -x "$pg" ] || { echo "bench_diagnosis_attention.sh: build phasegate first ($pg)"; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/op"
cat > "$work/op/module_interfaces.yaml" <<'YAML'
schema_version: 1
op: att
module_count: 1
is_fusion: true
has_cross_core: false
dims: {B: 1, H: 4, S: 256, D: 64}
primary_inputs:
  - {name: q, shape: [B, H, S, D], dtype: float32, fill: normal(0, 1)}
  - {name: k, shape: [B, H, S, D], dtype: float32, fill: normal(0, 1)}
  - {name: v, shape: [B, H, S, D], dtype: float32, fill: uniform(-1, 1)}
modules:
  - id: 1
    name: attention
    section: mix
    inputs: [{name: q, source: primary}, {name: k, source: primary}, {name: v, source: primary}]
    outputs: [{name: out, shape: [B, H, S, D], dtype: float32}]
    golden:
      - s = matmul(q, k, trans_b=true, alpha=1/sqrt(D))
      - p = softmax(s, axis=-1)
      - out = matmul(p, v)
final_outputs:
  - {name: out, source: module_1}
tolerance: {atol: 1e-4, rtol: 1e-4}
YAML
printf '{"op": "att", "total_modules": 1, "cases": [{"id": "L2_a", "level": 2, "seed": 9}]}\n' \
  > "$work/op/adversarial_suite.json"
cat > "$work/impl.py" <<'PY'
import os
import numpy as np

def bf16(x):
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000
    return u.astype(np.uint32).view(np.float32)

def att_module1_wrapper(q, k, v):
    q, k, v = (np.asarray(t, np.float32) for t in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    if os.environ.get("BENCH_BUG") == "sign":
        return np.ascontiguousarray(-(p @ v))
    acc = np.zeros(q.shape[:-1] + (v.shape[-1],), np.float32)
    for c0 in range(0, v.shape[-2], 32):
        acc = bf16(acc + p[..., c0:c0 + 32] @ v[..., c0:c0 + 32, :])
    return acc
PY
"$py" - "$n" "$pg" "$base" "$work" "$py" <<'PYEOF'
import json, os, statistics, subprocess, sys, time
n, pg, base, work, py = int(sys.argv[1]), *sys.argv[2:]
def cmd(exe, extra):
    return [exe, "run", "--op-dir", work + "/op", "--impl", "python:" + work + "/impl.py",
            "--up-to-module", "1", "--modes", "sim", "--no-golden-cache", "--no-bisect",
            "--python", py, "--suite-strength-max-elems", "0", "--report", work + "/r.json", *extra]
runs = {"off": (pg, ["--diagnose-budget", "0"]), "full": (pg, ["--diagnose-budget", "600"]),
        "dflt": (pg, [])}
if base:
    runs.update({"base_full": (base, ["--diagnose-budget", "600"]), "base_dflt": (base, [])})
for bug in ("bf16acc", "sign"):
    got = {k: [] for k in runs}
    for _ in range(n):
        for name, (exe, extra) in runs.items():
            t0 = time.perf_counter()
            r = subprocess.run(cmd(exe, extra), capture_output=True, text=True,
                               env=dict(os.environ, BENCH_BUG=bug))
            wall = time.perf_counter() - t0
            rep = json.load(open(work + "/r.json"))
            c = rep["checks"][0]
            kinds = [h["kind"] for t in c["per_tensor"] for h in t.get("hints", [])]
            got[name].append((wall, c.get("durations_ms", {}).get("diagnosis", 0.0),
                              c.get("durations_ms", {}).get("total", 0.0), kinds[:1], r.returncode))
    print(f"bug {bug} (medians of {n}):")
    med = {}
    for name, rows in got.items():
        med[name] = [statistics.median(r[i] for r in rows) for i in range(3)]
        print(f"  {name:10s} wall {med[name][0]:6.2f} s  case total {med[name][2] / 1e3:6.2f} s  "
              f"diagnosis {med[name][1] / 1e3:6.2f} s  exit {rows[-1][4]}  hint {rows[-1][3]}")
    for v in ("full", "dflt"):
        print(f"  {v}: case total / off {med[v][2] / max(med['off'][2], 1e-9):.2f}x", end="")
        if base:
            print(f"; diagnosis new / base {med[v][1] / max(med['base_' + v][1], 1e-9):.2f}x "
                  f"(+{(med[v][1] - med['base_' + v][1]) / 1e3:.2f} s)", end="")
        print()
PYEOF
