#!/bin/sh
# Inputs from the op's own eval/test_inputs.py (docs/pypto.md "Inputs from make_inputs") on
# tests/data/pypto_inputs/custom/knob_mlp, copied to OUT_DIR: make_inputs(case) with a
# knob (scale_A) that changes the inputs and the verdict (the impl's accumulator
# saturates: PASS at scale_A 1, FAIL at 1000), an int32 input and a non-tensor input
# (alpha, passed as a float: the goldens assert it); validate's warning for a knob
# nothing reads (gate_mode), naming the case and the key; --save-data, gen and the repro
# line reproducing make_inputs's tensors bit for bit; an edited test_inputs.py is a
# golden-cache miss; cancellation_stress goes to make_inputs, not phasegate's search;
# selftest makes its inputs with make_inputs.
#   make_inputs.sh PHASEGATE PYTHON DATA_DIR OUT_DIR
set -u
pg=$1 py=$2 src=$3 out=$4
op=knob_mlp
rm -rf "$out" && mkdir -p "$out/ws" || exit 1
cp -R "$src/custom" "$out/ws/" || exit 1
export PHASEGATE_PYTHON="$py" PYTHONDONTWRITEBYTECODE=1
export PHASEGATE_CACHE_DIR="$out/cache"
fails=0
. "$(dirname "$0")/step.sh"   # step WANT_EXIT NEEDLE ARGS...
cd "$out/ws" || exit 1
d=custom/$op
impl=python:$d/modules

# validate: the unread knob, by case and key; the read ones (scale_A, alpha) are not named
step 0 "case 'L5_large_scale': knob 'gate_mode' is never read by make_inputs" \
  validate --op-dir $d --python "$py" --format json
! grep -q "knob 'scale_A'\|knob 'alpha'\|knob 'cancellation_stress'" "$out/o.txt" ||
  { echo "FAIL: a read knob was warned about"; cat "$out/o.txt"; fails=1; }
"$py" - "$out/o.txt" <<'PY' || fails=1
import json, sys
v = json.load(open(sys.argv[1]))
k = [f for f in v["findings"] if f.get("rule") == "knob"]
if v["status"] != "OK" or len(k) != 1 or (k[0]["severity"], k[0]["line"], k[0]["column"]) != ("warning", 8, 5):
    print("FAIL: validate: want one knob warning at the case's line 8:5, got", k, v["status"])
    sys.exit(1)
PY

# composition verification makes its inputs with make_inputs too (the goldens need alpha)
step 0 "selftest $op: PASS (1/1 comparisons" selftest --op-dir $d

# the knob changes the verdict: same seed and shape, scale_A 1 (L2_unit) vs 1000
step 1 "$op M1: FAIL  1 passed, 1 failed" run --op-dir $d --impl $impl --up-to-module 1 \
  --case L2_unit,L5_large_scale --report "$out/m1.json"
grep -qF "[PASS] $op M1 L2_unit" "$out/o.txt" && grep -qF "[FAIL] $op M1 L5_large_scale" "$out/o.txt" ||
  { echo "FAIL: want L2_unit PASS and L5_large_scale FAIL"; fails=1; }
grep -qF "knob(s) gate_mode" "$out/o.txt" || { echo "FAIL: run does not warn about gate_mode"; fails=1; }
step 1 "earliest failing M1" run --op-dir $d --impl $impl --up-to-module 2 \
  --case smoke,L2_unit,L5_large_scale,L5_cancel --save-data "$out/saved" --report "$out/m2.json"
grep -qF "3 passed, 1 failed" "$out/o.txt" || { echo "FAIL: want smoke, L2_unit and L5_cancel to pass"; fails=1; }
# the repro line of the failing case reruns it on the same inputs
repro=$("$py" -c "import json,sys; r=json.load(open(sys.argv[1])); print([c for c in r['checks'] if c['id']=='L5_large_scale'][0]['repro'])" "$out/m2.json")
case "$repro" in *"--case L5_large_scale"*) ;; *) echo "FAIL: repro line: $repro"; fails=1 ;; esac
eval "$repro --save-data '$out/again' --report '$out/again.json'" >"$out/o.txt" 2>&1
[ $? -eq 1 ] || { echo "FAIL: the repro line did not fail again:"; cat "$out/o.txt"; fails=1; }
for t in x w mask; do
  cmp -s "$out/saved/L5_large_scale/in/$t.npy" "$out/again/L5_large_scale/in/$t.npy" ||
    { echo "FAIL: repro: input $t differs"; fails=1; }
done
cmp -s "$out/saved/L5_large_scale/in/arguments.json" "$out/again/L5_large_scale/in/arguments.json" ||
  { echo "FAIL: repro: arguments differ"; fails=1; }
# gen writes the same tensors
step 0 "make_inputs of" gen --op-dir $d --case L5_large_scale --out "$out/gen" --python "$py"
for t in x w mask; do
  cmp -s "$out/saved/L5_large_scale/in/$t.npy" "$out/gen/$t.npy" || { echo "FAIL: gen: $t differs"; fails=1; }
done
# --golden-data replays the saved inputs and the non-tensor input
step 1 "$op M2: FAIL" run --op-dir $d --impl $impl --up-to-module 2 --case L5_large_scale \
  --golden-data "$out/saved" --report "$out/gd.json"

# the saved tensors are make_inputs's, bit for bit, and alpha is the case's
"$py" - "$out" "$d/eval" <<'PY' || fails=1
import json, sys
import numpy as np
out, ev = sys.argv[1], sys.argv[2]
sys.path.insert(0, ev)
import test_inputs
suite = json.load(open(f"{ev}/adversarial_suite.json"))
bad = []
for case in suite["test_cases"]:
    cid = case["id"]
    made = test_inputs.make_inputs(dict(case))
    for name in ("x", "w", "mask"):
        got = np.load(f"{out}/saved/{cid}/in/{name}.npy")
        want = made[name].numpy()
        if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
            bad.append(f"{cid}/{name}: saved {got.dtype}{got.shape} differs from make_inputs")
    args = json.load(open(f"{out}/saved/{cid}/in/arguments.json"))
    if args != {"order": ["x", "w", "mask", "alpha"], "scalars": {"alpha": made["alpha"]}}:
        bad.append(f"{cid}: arguments.json {args}")
# the knob is what differs between L2_unit and L5_large_scale (same seed and shape)
x1, x2 = (np.load(f"{out}/saved/{c}/in/x.npy") for c in ("L2_unit", "L5_large_scale"))
if not np.array_equal(x1 * np.float32(1000), x2) or np.array_equal(x1, x2):
    bad.append("scale_A did not scale x by 1000")
r = json.load(open(f"{out}/m2.json"))
st = {c["id"]: c["status"] for c in r["checks"]}
if st != {"smoke": "PASS", "L2_unit": "PASS", "L5_large_scale": "FAIL", "L5_cancel": "PASS"}:
    bad.append(f"m2 statuses {st}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY

# the golden cache: the repro run above found L5_large_scale's M2 golden cached; an
# edited test_inputs.py (scale_A read twice as large) is another key, computed again
sed -i 's/scale = float(case.get("scale_A", 1.0))/scale = 2 * float(case.get("scale_A", 1.0))/' \
  $d/eval/test_inputs.py
grep -q "scale = 2 \*" $d/eval/test_inputs.py || { echo "FAIL: could not edit test_inputs.py"; fails=1; }
step 1 "$op M2: FAIL" run --op-dir $d --impl $impl --up-to-module 2 --case L5_large_scale \
  --report "$out/edited.json"
"$py" - "$out" <<'PY' || fails=1
import json, sys
out = sys.argv[1]
got = [json.load(open(f"{out}/{n}.json"))["checks"][0]["golden_cached"] for n in ("again", "edited")]
if got != [True, False]:
    print(f"FAIL: golden_cached of the repro run / after editing test_inputs.py: {got}")
    sys.exit(1)
PY
exit $fails
