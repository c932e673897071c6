#!/bin/sh
# bench_diagnosis.sh — what diagnosing a failing 2 x 256 MiB case costs (issue 13,
# docs/diagnosis.md "Counterfactual goldens", bounds): one module, x [8192, 8192] fp32
# -> y = scale(x, 2), z = softmax(x, axis=-1), the impl plugin bench_diag_plugin with a
# bug planted in each output (y = 4x, z over axis 0), --diagnose-max-mib 512.
# Runs, alternated N times each (medians of wall time and durations_ms.diagnosis):
#   diag     the default diagnosis budget
#   full     --diagnose-budget 600 (every mutant, no budget cut)
#   off      --diagnose-budget 0 (the peer: the same run without diagnosis)
# and, in the same run, a numpy pass over the same bytes (the 2 x 256 MiB outputs
# copied, and compared as allclose): the price of one look at the data.
#
#   tools/bench/bench_diagnosis.sh [BUILD_DIR] [N]
# Env: PYTHON (default /usr/bin/python3).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
n=${2:-3}
py=${PYTHON:-/usr/bin/python3}
pg="$build/runner/phasegate"
impl="$build/tools/bench/libbench_diag_plugin.so"
[ -x "$pg" ] || { echo "bench_diagnosis.sh: build phasegate first ($pg)"; exit 2; }
[ -f "$impl" ] || { echo "bench_diagnosis.sh: build bench_diag_plugin first ($impl)"; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/op"
cat > "$work/op/module_interfaces.yaml" <<'YAML'
schema_version: 1
op: diag
module_count: 1
is_fusion: false
has_cross_core: false
dims: {R: 8192, C: 8192}
primary_inputs:
  - {name: x, shape: [R, C], dtype: float32, fill: normal(0, 1)}
modules:
  - id: 1
    name: two
    section: vector
    inputs: [{name: x, source: primary}]
    outputs:
      - {name: y, shape: [R, C], dtype: float32}
      - {name: z, shape: [R, C], dtype: float32}
    golden:
      - y = scale(x, factor=2)
      - z = softmax(x, axis=-1)
final_outputs:
  - {name: y, source: module_1}
  - {name: z, source: module_1}
tolerance: {atol: 1e-5, rtol: 1e-4}
YAML
printf '{"op": "diag", "total_modules": 1, "cases": [{"id": "L2_big", "level": 2, "seed": 1}]}\n' \
  > "$work/op/adversarial_suite.json"
"$py" - "$n" "$pg" "$impl" "$work" <<'PYEOF'
import json, subprocess, sys, time
import numpy as np
n, pg, impl, work = int(sys.argv[1]), *sys.argv[2:]
base = [pg, "run", "--op-dir", work + "/op", "--impl", "plugin:" + impl, "--up-to-module", "1",
        "--no-golden-cache", "--no-bisect", "--diagnose-max-mib", "512",
        "--report", work + "/r.json"]
runs = {"diag": [], "full": ["--diagnose-budget", "600"], "off": ["--diagnose-budget", "0"]}
res = {k: ([], [], []) for k in list(runs) + ["numpy"]}
a = np.random.default_rng(1).standard_normal((2, 8192, 8192), dtype=np.float32)
b = a * np.float32(1.0001)
dst = np.empty_like(a)
hints = {}
for _ in range(n):
    for k, extra in runs.items():
        t0 = time.perf_counter()
        r = subprocess.run(base + extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = (time.perf_counter() - t0) * 1e3
        if r.returncode != 1:
            sys.exit(f"bench_diagnosis.sh: {k}: expected FAIL (exit 1), got {r.returncode}")
        c = json.load(open(work + "/r.json"))["checks"][0]
        d = c.get("durations_ms", {})
        res[k][0].append(wall)
        res[k][1].append(d.get("diagnosis", 0.0))
        res[k][2].append(d.get("total", 0.0) - d.get("diagnosis", 0.0))
        hints[k] = [h["kind"] for t in c["per_tensor"] for h in t.get("hints", [])]
    t0 = time.perf_counter()
    np.copyto(dst, a)
    t1 = time.perf_counter()
    ok = np.abs(a - b) <= 1e-5 + 1e-4 * np.abs(b)
    ok.all()
    t2 = time.perf_counter()
    res["numpy"][0].append((t1 - t0) * 1e3)
    res["numpy"][1].append((t2 - t1) * 1e3)
med = lambda v: sorted(v)[len(v) // 2]
print(f"failing case: 2 outputs x 256 MiB fp32 (x [8192, 8192]); {n} runs each, medians")
for k in runs:
    w, dg, rest = (med(v) for v in res[k])
    print(f"  {k:5s} wall {w / 1e3:6.2f} s   diagnosis {dg / 1e3:6.2f} s   rest of the case "
          f"{rest / 1e3:5.2f} s   hints {hints[k]}")
off = med(res["off"][0])
for k in ("diag", "full"):
    print(f"  {k}: {med(res[k][0]) / off:.2f}x the run without diagnosis "
          f"(diagnosis {med(res[k][1]) / max(1e-9, med(res[k][2])):.2f}x the rest of the case)")
mc, cmp = med(res["numpy"][0]), med(res["numpy"][1])
print(f"  numpy over the same 512 MiB: copy {mc:.0f} ms, allclose-style compare {cmp:.0f} ms; "
      f"full diagnosis = {med(res['full'][1]) / cmp:.0f} numpy compares")
PYEOF
