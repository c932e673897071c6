#!/bin/sh
# tools/bench/bench_contract.sh — contract loading speed against PyYAML, same machine
# and run. A generated contract with M modules (3 inputs, 2 outputs, 2 golden steps
# each; ~0.4 KB per module) is loaded by phasegate (read + libyaml parse + every rule
# check) and by PyYAML's yaml.load with CSafeLoader (libyaml's C scanner, building
# Python objects, no validation) and with the pure-Python SafeLoader. Prints best-of-5
# times and ratios (peer time / ours; > 1 means phasegate is faster).
#
#   tools/bench/bench_contract.sh [BUILD_DIR] [MODULES]
# BUILD_DIR defaults to ./build; it must contain tools/bench/bench_contract (built with
# `ninja -C BUILD_DIR bench_contract`, Release or RelWithDebInfo for meaningful numbers).
set -eu
BUILD=${1:-build}
M=${2:-1000}
PY=${PYTHON:-/usr/bin/python3}
B="$BUILD/tools/bench/bench_contract"
[ -x "$B" ] || { echo "missing $B: ninja -C $BUILD bench_contract" >&2; exit 2; }
"$PY" -c "import yaml" 2>/dev/null || { echo "PyYAML missing for $PY" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
F="$TMP/module_interfaces.yaml"

"$PY" - "$M" "$F" <<'PYEOF'
import sys
m, path = int(sys.argv[1]), sys.argv[2]
out = ["schema_version: 1", "op: bench", f"module_count: {m}", "dims: {B: 2, T: 128, H: 64}",
       "primary_inputs:",
       "  - {name: x, shape: [B, T, H], dtype: float16, fill: \"normal(0, 1)\"}",
       "  - {name: w, shape: \"[H, H]\", dtype: float16}", "modules:"]
for i in range(1, m + 1):
    src = "primary" if i == 1 else f"module_{i - 1}"
    prev = "x" if i == 1 else f"y{i - 1}"
    out += [f"  - id: {i}", f"    name: stage_{i}", f"    description: stage {i} of the chain",
            "    section: vector", "    inputs:",
            f"      - {{name: {prev}, source: {src}}}", "      - {name: w, source: primary}",
            "      - {name: x, source: primary}", "    outputs:",
            f"      - {{name: y{i}, shape: [B, T, H], dtype: float16}}",
            f"      - {{name: aux{i}, shape: [B, T // 2 * 2, H + 0], dtype: float32, atol: 1e-3}}",
            "    golden:", f"      - t = matmul({prev}, w)", f"      - y{i} = add(t, x)"]
out += ["final_outputs:", f"  - {{name: y{m}, source: module_{m}}}",
        "tolerance: {atol: 1e-3, rtol: 1e-3}"]
open(path, "w").write("\n".join(out) + "\n")
PYEOF

read -r ms mbs mods errs <<EOF2
$("$B" "$F" 5)
EOF2
[ "$errs" = 0 ] || { echo "generated contract has $errs errors" >&2; exit 1; }
py_ms() { # $1: loader class name
  "$PY" - "$F" "$1" <<'PYEOF'
import sys, time, yaml
path, loader = sys.argv[1], getattr(yaml, sys.argv[2])
best = 1e30
for _ in range(5 if loader is yaml.CSafeLoader else 2):
    t0 = time.perf_counter()
    with open(path) as f:
        yaml.load(f, Loader=loader)
    best = min(best, time.perf_counter() - t0)
print(f"{best * 1e3:.3f}")
PYEOF
}
c_ms=$(py_ms CSafeLoader)
p_ms=$(py_ms SafeLoader)
size=$(wc -c < "$F")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "contract: $mods modules, $size bytes"
echo "phasegate load+validate      ${ms} ms  (${mbs} MB/s)"
echo "PyYAML CSafeLoader (parse)   ${c_ms} ms  ratio $(ratio "$c_ms" "$ms")x"
echo "PyYAML SafeLoader (parse)    ${p_ms} ms  ratio $(ratio "$p_ms" "$ms")x"
