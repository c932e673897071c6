#!/bin/sh
# The bundled pypto verifier-layout op (suites/pypto/custom/ln_ffn_silu, docs/pypto.md)
# through phasegate exactly as its files are: on a copy of the workspace (the source
# tree stays clean), `validate`, `list`, `selftest` and the seed's `--self-test`, then
# `run --impl python:modules/<op>_module<suffix>_impl.py --up-to-module k` for k = 1..3
# in modes sim,npu (npu SKIPPED on a host without torch_npu), each writing
# custom/<op>/eval/evaluation_report.json by default with the seed's keys and types.
# A planted bug (the last partial K tile of the up projection dropped, in the staged
# sets 12 and 123 of a second copy) must PASS at M1 and FAIL at the integer boundaries
# 2 and 3 (and, through python:DIR, bisect to the earliest boundary 2); a phase-3 run of
# the phase-2 file and python:DIR without a phase's file are ERROR, `structural`, naming
# what is missing (the workflow's route for a missing module symbol).
# No golden source or golden value may reach a report.
#   verifier_example.sh PHASEGATE PYTHON WORKSPACE OUT_DIR
set -u
pg=$1 py=$2 src=$3 out=$4
op=ln_ffn_silu
rm -rf "$out" && mkdir -p "$out/ws" "$out/bug" || exit 1
cp -R "$src/custom" "$out/ws/" && cp -R "$src/custom" "$out/bug/" || exit 1
export PHASEGATE_PYTHON="$py" PYTHONDONTWRITEBYTECODE=1
export PHASEGATE_CACHE_DIR="$out/cache"
report=custom/$op/eval/evaluation_report.json
fails=0
. "$(dirname "$0")/step.sh"   # step WANT_EXIT NEEDLE ARGS...
impl() { echo "python:custom/$op/modules/${op}_module$1_impl.py"; }

cd "$out/ws" || exit 1
step 0 "$op: 3 modules, 5 primary inputs, 11 cases" validate --op-dir custom/$op
# a real contract has no dims: section: validate notes it, the other commands stay quiet
grep -qF "has no default value" "$out/o.txt" || { echo "FAIL: validate lost its notes"; fails=1; }
"$pg" run --op-dir custom/$op --impl "$(impl 1)" --up-to-module 1 --case smoke >"$out/o.txt" 2>&1
! grep -qF "note:" "$out/o.txt" || { echo "FAIL: run prints validate's notes:"; cat "$out/o.txt"; fails=1; }
step 0 "\"$op/M3/L5/L5_odd_everything\"" list --op-dir custom/$op --format json
[ "$(grep -c "\"$op/M" "$out/o.txt")" -eq 33 ] || { echo "FAIL: want 33 tests"; fails=1; }
step 0 "PASS" selftest --op-dir custom/$op
step 0 "PASS" --self-test --op-dir custom/$op
k=0
for suffix in 1 12 123; do
  k=$((k + 1))
  rm -f "$report"
  step 0 "$op M$k: PASS" run --op-dir custom/$op --impl "$(impl $suffix)" --up-to-module $k \
    --modes sim,npu
  cp "$report" "$out/M$k.json" 2>/dev/null || { echo "FAIL: M$k: no $report"; fails=1; }
done
# The seed's spelling, no subcommand; one case.
step 0 "1 passed" --op-dir custom/$op --impl "$(impl 12)" --up-to-module 2 --case L3_tail_rows \
  --report "$out/seed_spelling.json"
# The naming contract: phase 3 needs ln_ffn_silu_module123_wrapper, the phase-2 file lacks it.
step 2 "${op}_module123_wrapper" run --op-dir custom/$op --impl "$(impl 12)" --up-to-module 3 \
  --case L2_canonical --report "$out/structural.json"
# python:DIR, the staged files of every phase from modules/ (what IMPL_PYTHON registers).
for k in 1 2 3; do
  step 0 "$op M$k: PASS" run --op-dir custom/$op --impl python:custom/$op/modules \
    --up-to-module $k --levels L0,L2,L3 --report "$out/dir_M$k.json"
done
# The copy is unchanged apart from the report phasegate wrote into eval/.
diff -r -x evaluation_report.json -x __pycache__ \
  "$src/custom" custom >"$out/diff.txt" 2>&1 || { echo "FAIL: the op directory changed:"; cat "$out/diff.txt"; fails=1; }

# The planted bug: `range(0, K, K_TILE)` -> whole tiles only, in staged sets 12 and 123.
cd "$out/bug" || exit 1
for suffix in 12 123; do
  f=custom/$op/modules/${op}_module${suffix}_impl.py
  sed -i 's/range(0, xn.shape\[1\], K_TILE)/range(0, xn.shape[1] - K_TILE + 1, K_TILE)/' "$f"
  grep -q 'K_TILE + 1, K_TILE' "$f" || { echo "FAIL: could not plant the bug in $f"; fails=1; }
done
step 0 "$op M1: PASS" run --op-dir custom/$op --impl "$(impl 1)" --up-to-module 1
k=1
for suffix in 12 123; do
  k=$((k + 1))
  rm -f "$report"
  step 1 "$op M$k: FAIL" run --op-dir custom/$op --impl "$(impl $suffix)" --up-to-module $k
  cp "$report" "$out/bug_M$k.json" 2>/dev/null || { echo "FAIL: bug M$k: no $report"; fails=1; }
done
# Through python:DIR bisection reaches the staged set 12: the earliest failing boundary is 2.
step 1 "$op M3: FAIL" run --op-dir custom/$op --impl python:custom/$op/modules --up-to-module 3 \
  --report "$out/bug_dir_M3.json"
# A phase without its staged file is an ERROR, structural, naming the file.
mv custom/$op/modules/${op}_module1_impl.py "$out/"
step 2 "${op}_module1_impl.py does not exist" run --op-dir custom/$op \
  --impl python:custom/$op/modules --up-to-module 1 --case smoke --report "$out/missing.json"

"$py" - "$out" "$op" <<'PY' || fails=1
import json, sys
out, op = sys.argv[1], sys.argv[2]
seed = {"op_name": str, "impl_file": str, "up_to_module": int, "total_modules": int,
        "status": str, "checks": list, "cases_total": int, "cases_passed": int,
        "per_mode_status": dict, "stdout": str}
check = {"id": str, "level": int, "precision_checked": bool, "all_close": bool,
         "max_abs_diff": (int, float, type(None)), "max_rel_diff": (int, float, type(None)),
         "per_mode_status": dict}
first = {"case_id": str, "failing_module_boundary": int, "failure_category": str,
         "divergence_fingerprint": (str, type(None)), "summary": str}
forbidden = ["layer_norm", "rsqrt", "torch.sigmoid", "F.silu", "_golden("]  # golden source must not leak
bad = []
def typed(where, obj, spec):
    for key, t in spec.items():
        if key not in obj:
            bad.append(f"{where}: missing {key}")
        elif not isinstance(obj[key], t) or (t is int and isinstance(obj[key], bool)):
            bad.append(f"{where}: {key} is {type(obj[key]).__name__}: {obj[key]!r}")
def load(name):
    try:
        text = open(f"{out}/{name}.json").read()
    except OSError as e:
        bad.append(f"{name}: {e}")
        return None
    bad.extend(f"{name}: report contains '{f}'" for f in forbidden if f in text)
    r = json.loads(text)
    typed(name, r, seed)
    for c in r.get("checks", []):
        typed(f"{name} {c.get('id')}", c, check)
    return r
for k in (1, 2, 3):
    r = load(f"M{k}")
    if r is None:
        continue
    head = (r["op_name"], r["up_to_module"], r["total_modules"], r["status"])
    if head != (op, k, 3, "PASS"):
        bad.append(f"M{k}: {head}")
    if r["per_mode_status"] != {"sim": "PASS", "npu": "SKIPPED"} or r.get("first_failure") is not None:
        bad.append(f"M{k}: per_mode_status {r['per_mode_status']} first_failure {r.get('first_failure')}")
    if (r["cases_total"], r["cases_passed"]) != (11, 11):
        bad.append(f"M{k}: cases {r['cases_total']} {r['cases_passed']}")
    lv = {c["id"]: (c["level"], c["precision_checked"]) for c in r["checks"]}
    if lv.get("smoke") != (0, True) or lv.get("L1_tiny") != (1, False) or lv.get("L2_second_seed") != (2, True):
        bad.append(f"M{k}: levels / precision {lv}")
for k in (2, 3):
    r = load(f"bug_M{k}")
    if r is None:
        continue
    ff = r.get("first_failure") or {}
    typed(f"bug_M{k} first_failure", ff, first)
    got = (r["status"], ff.get("case_id"), ff.get("failing_module_boundary"), ff.get("failure_category"))
    if got != ("FAIL", "smoke", k, "precision"):
        bad.append(f"bug_M{k}: {got}")
    failed = sorted(c["id"] for c in r["checks"] if c.get("status") != "PASS")
    want = ["L3_tail_rows", "L5_odd_everything", "L5_width_one", "smoke"]
    if failed != want:
        bad.append(f"bug_M{k}: failing cases {failed}, want {want}")
    # j from bisection; null when the phase's file has no earlier wrapper to re-run
    e = ff.get("earliest_failing_boundary")
    if e is not None and (not isinstance(e, int) or isinstance(e, bool) or not 2 <= e <= k):
        bad.append(f"bug_M{k}: earliest_failing_boundary {e!r}")
for name in ("structural", "missing"):
    s = load(name) or {}
    if (s.get("status"), (s.get("first_failure") or {}).get("failure_category")) != \
            ("ERROR", "structural"):
        bad.append(f"{name}: {s.get('first_failure')}")
for k in (1, 2, 3):
    r = load(f"dir_M{k}")
    if r and (r["status"], r["up_to_module"], r["cases_total"]) != ("PASS", k, 5):
        bad.append(f"dir_M{k}: {r['status']} {r['up_to_module']} {r['cases_total']}")
r = load("bug_dir_M3") or {}
ff = r.get("first_failure") or {}
if (ff.get("failing_module_boundary"), ff.get("earliest_failing_boundary")) != (3, 2):
    bad.append(f"bug_dir_M3: {ff}")
print("\n".join(bad) or "reports ok")
sys.exit(1 if bad else 0)
PY
exit $fails
