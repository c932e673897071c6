#!/bin/sh
# pypto workflow end to end (docs/design.md §3, §6, §8, §9) on tests/data/pypto: an op laid
# out as custom/<op>/eval/{module_interfaces.yaml,adversarial_suite.json} is validated,
# listed, self-tested with the seed's `--self-test`, and run phase by phase through
# the seed's subcommand-less spelling with an exec impl (numpy) in modes sim,npu
# (npu SKIPPED). The report must carry exactly the seed's keys; a seeded bug must
# FAIL at the M2 boundary; --save-data then --golden-data DIR/<case> (DIR/in + DIR/out,
# the pypto-lib layout) must reproduce both verdicts on identical tensors.
#   pypto_e2e.sh PHASEGATE PYTHON DATA_DIR TOOLS_DIR OUT_DIR
set -u
pg=$1 py=$2 data=$3 tools=$4 out=$5
rm -rf "$out" && mkdir -p "$out"
cd "$data" || exit 1
export PG_TOOLS_DIR="$tools"
impl="exec:$py custom/rms_gate/impl.py"
fails=0
. "$(dirname "$0")/step.sh"   # step WANT_EXIT NEEDLE ARGS...
step 0 "rms_gate: 3 modules, 3 primary inputs, 4 cases" validate --op-dir custom/rms_gate
step 0 '"rms_gate/M3/L5/L5_large_scale"' list --op-dir custom/rms_gate --format json
[ "$(grep -c '"rms_gate/M' "$out/o.txt")" -eq 12 ] || { echo "FAIL: want 12 tests"; fails=1; }
step 0 "selftest rms_gate: PASS (4/4" --self-test --op-dir custom/rms_gate
for k in 1 2 3; do
  step 0 "rms_gate M$k: PASS  4 passed" --op-dir custom/rms_gate --impl "$impl" --up-to-module $k \
    --modes sim,npu --report "$out/M$k.json" --no-golden-cache
done
step 0 "y: n 1536  mismatches 0" --op-dir custom/rms_gate --impl "$impl" --up-to-module 3 \
  --case L2_canonical --inspect y --report "$out/inspect.json"
step 1 "boundary M2" --op-dir custom/rms_gate --impl "$impl --bug" --up-to-module 2 \
  --report "$out/bug.json" --no-golden-cache
"$py" - "$out" <<'PY' || fails=1
import json, sys
out = sys.argv[1]
seed = {"op_name", "impl_file", "up_to_module", "total_modules", "status", "checks",
        "cases_total", "cases_passed", "per_mode_status", "first_failure", "stdout"}
check = {"id", "level", "precision_checked", "all_close", "max_abs_diff", "max_rel_diff",
         "per_mode_status", "per_tensor"}
first = {"case_id", "failing_module_boundary", "failure_category", "divergence_fingerprint",
         "summary"}
bad = []
for k in (1, 2, 3):
    r = json.load(open(f"{out}/M{k}.json"))
    bad += [f"M{k}: missing {key}" for key in seed - r.keys()]
    if (r["op_name"], r["up_to_module"], r["total_modules"], r["status"]) != ("rms_gate", k, 3, "PASS"):
        bad.append(f"M{k}: header {r['op_name']} {r['up_to_module']} {r['total_modules']} {r['status']}")
    if r["per_mode_status"] != {"sim": "PASS", "npu": "SKIPPED"} or r["first_failure"] is not None:
        bad.append(f"M{k}: per_mode_status {r['per_mode_status']} first_failure {r['first_failure']}")
    if (r["cases_total"], r["cases_passed"]) != (4, 4) or len(r["checks"]) != 4:
        bad.append(f"M{k}: cases {r['cases_total']} {r['cases_passed']}")
    for c in r["checks"]:
        bad += [f"M{k} {c.get('id')}: missing {key}" for key in check - c.keys()]
    lv = {c["id"]: (c["level"], c["precision_checked"]) for c in r["checks"]}
    if lv.get("L1_structural", (0, 1))[1] or lv.get("L3_odd_tokens", (0,))[0] != 3:
        bad.append(f"M{k}: levels / precision {lv}")
r = json.load(open(f"{out}/bug.json"))
# all_close is the seed's (every mode PASS or SKIPPED): the structure-only L1 case passes
# with values the bug put off, which per_tensor shows
l1 = next(c for c in r["checks"] if c["id"] == "L1_structural")
if (l1["status"], l1["all_close"], l1["per_tensor"][0]["all_close"]) != ("PASS", True, False):
    bad.append(f"bug: L1_structural {l1['status']} all_close {l1['all_close']} "
               f"per_tensor {l1['per_tensor'][0]['all_close']}")
ff = r["first_failure"] or {}
bad += [f"bug: missing first_failure.{key}" for key in first - ff.keys()]
# the seed's types: failing_module_boundary is the integer k; bisection's j apart
if (r["status"], ff.get("failing_module_boundary"), ff.get("earliest_failing_boundary"),
        ff.get("failure_category")) != ("FAIL", 2, 2, "precision") \
        or type(ff.get("failing_module_boundary")) is not int:
    bad.append(f"bug: {r['status']} {ff}")
print("\n".join(bad) or "report keys ok")
sys.exit(1 if bad else 0)
PY
# --golden-data with the pypto-lib layout: DIR/in + DIR/out for one case.
step 0 "rms_gate M2: PASS" --op-dir custom/rms_gate --impl "$impl" --up-to-module 2 \
  --save-data "$out/saved" --report "$out/save.json"
[ -f "$out/saved/L3_odd_tokens/in/x.npy" ] && [ -f "$out/saved/L3_odd_tokens/out/a.npy" ] ||
  { echo "FAIL: --save-data layout"; fails=1; }
step 0 "1 passed, 0 failed" run --op-dir custom/rms_gate --impl "$impl" --up-to-module 2 \
  --case L3_odd_tokens --golden-data "$out/saved/L3_odd_tokens" --report "$out/gd.json"
step 1 "48 of 448 elements" run --op-dir custom/rms_gate --impl "$impl --bug" --up-to-module 2 \
  --case L3_odd_tokens --golden-data "$out/saved/L3_odd_tokens" --report "$out/gd_bug.json"
exit $fails
