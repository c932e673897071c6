#!/bin/sh
# L0 ops and the end-to-end check (docs/pypto.md "L0 ops", "The end-to-end check") on
# copies of tests/data/pypto_inputs: l0_add (module_count 1, only l0_add_impl.py and
# l0_add_golden.py) validates without "no golden", runs phase 1 against l0_add_golden.py
# through l0_add_wrapper (the file, and python:DIR), and a planted bug (the last element
# dropped) fails it; `run --e2e` on knob_mlp compares the integrated knob_mlp_impl.py
# with knob_mlp_golden.py on the final output y (its saturating accumulator fails the
# large-scale case only), writes eval/evaluation_report_e2e.json with up_to_module N and
# a repro line with --e2e; --e2e refusals: another --up-to-module, no <op>_impl.py, no
# op-level golden.
#   l0_e2e.sh PHASEGATE PYTHON DATA_DIR OUT_DIR
set -u
pg=$1 py=$2 src=$3 out=$4
rm -rf "$out" && mkdir -p "$out/ws" || exit 1
cp -R "$src/custom" "$out/ws/" || exit 1
export PHASEGATE_PYTHON="$py" PYTHONDONTWRITEBYTECODE=1 PHASEGATE_CACHE_DIR="$out/cache"
fails=0
. "$(dirname "$0")/step.sh"   # step WANT_EXIT NEEDLE ARGS...
cd "$out/ws" || exit 1

# --- L0: phase 1 is l0_add_impl.py against l0_add_golden.py (plain Python: the worker
# need not import torch)
export PHASEGATE_PYTHON_NO_TORCH=1
l0=custom/l0_add
step 0 "l0_add: 1 module, 2 primary inputs, 2 cases" validate --op-dir $l0
! grep -qF "has no golden" "$out/o.txt" || { echo "FAIL: validate: an L0 op has no golden?"; cat "$out/o.txt"; fails=1; }
step 0 "l0_add M1: PASS  2 passed" run --op-dir $l0 --impl python:$l0/l0_add_impl.py --up-to-module 1
step 0 "l0_add M1: PASS  2 passed" run --op-dir $l0 --impl python:$l0 --up-to-module 1 \
  --report "$out/l0_dir.json"
step 0 "l0_add M1: PASS" run --op-dir $l0 --impl python:$l0/l0_add_impl.py::l0_add_wrapper \
  --up-to-module 1 --case smoke --report "$out/l0_fn.json"
export L0_ADD_BUG=1
step 1 "l0_add M1: FAIL  0 passed, 2 failed" run --op-dir $l0 \
  --impl python:$l0/l0_add_impl.py --up-to-module 1 --report "$out/l0_bug.json" --fresh-process
unset L0_ADD_BUG
# a staged wrapper wins over <op>_wrapper; a file with neither names both (an ERROR: the
# workflow routes a missing function to the impl author, not the kernel debugger)
printf 'def nothing(a, b):\n    return a\n' > "$out/l0_add_impl.py"
step 2 "has no function 'l0_add_module1_wrapper' nor 'l0_add_wrapper'" run --op-dir $l0 \
  --impl python:$out/l0_add_impl.py --up-to-module 1 --case smoke --report "$out/l0_none.json"
step 0 "l0_add M1: PASS" run --e2e --op-dir $l0 --case smoke
[ -f $l0/eval/evaluation_report_e2e.json ] || { echo "FAIL: no $l0/eval/evaluation_report_e2e.json"; fails=1; }

# --- the end-to-end check of knob_mlp: knob_mlp_impl.py vs knob_mlp_golden.py
unset PHASEGATE_PYTHON_NO_TORCH
k=custom/knob_mlp
step 1 "knob_mlp M2: FAIL  3 passed, 1 failed" run --e2e --op-dir $k
grep -qF -- "--e2e --case L5_large_scale" "$out/o.txt" || { echo "FAIL: no --e2e in the repro line"; fails=1; }
"$py" - $k/eval/evaluation_report_e2e.json "$out/ws/$k/knob_mlp_impl.py" <<'PY' || fails=1
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
if (r["up_to_module"], r["total_modules"], r["status"]) != (2, 2, "FAIL"):
    bad.append(f"head {r['up_to_module']} {r['total_modules']} {r['status']}")
if r["impl_file"] != f"python:{sys.argv[2]}::knob_mlp_wrapper":
    bad.append(f"impl_file {r['impl_file']}")
st = {c["id"]: c["status"] for c in r["checks"]}
if st != {"smoke": "PASS", "L2_unit": "PASS", "L5_large_scale": "FAIL", "L5_cancel": "PASS"}:
    bad.append(f"statuses {st}")
for c in r["checks"]:
    names = sorted({t.get("name") for t in c.get("per_tensor", [])})
    if names != ["y"]:
        bad.append(f"{c['id']}: compared {names}, want the final output y")
ff = r.get("first_failure") or {}
if ff.get("earliest_failing_boundary") is not None:
    bad.append(f"--e2e bisected: {ff.get('earliest_failing_boundary')}")
for b in bad:
    print("FAIL: e2e report:", b)
sys.exit(1 if bad else 0)
PY
# a fixed integrated impl passes, given with --impl
sed 's/torch.clamp(x @ w, -100.0, 100.0)/(x @ w)/' $k/knob_mlp_impl.py > "$out/fixed_impl.py"
step 0 "knob_mlp M2: PASS  4 passed" run --e2e --op-dir $k --impl python:"$out/fixed_impl.py::knob_mlp_wrapper" \
  --report "$out/fixed.json"
step 0 "knob_mlp M2: PASS" run --e2e --op-dir $k --up-to-module 2 --case smoke --report "$out/n.json"
step 2 "--e2e runs the whole op, phase 2 of op 'knob_mlp'; --up-to-module 1 names another" \
  run --e2e --op-dir $k --up-to-module 1
mv $k/knob_mlp_impl.py "$out/"
step 2 "--e2e: op 'knob_mlp' has no integrated impl $out/ws/$k/knob_mlp_impl.py" run --e2e --op-dir $k
mv "$out/knob_mlp_impl.py" $k/
mv $k/knob_mlp_golden.py "$out/"
step 2 "--e2e compares op 'knob_mlp' with its op-level golden: the op has no op-level golden" \
  run --e2e --op-dir $k
mv "$out/knob_mlp_golden.py" $k/
exit $fails
