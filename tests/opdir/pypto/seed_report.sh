#!/bin/sh
# The report a seed consumer reads (docs/design.md §7, §8): seed_schema.py checks every seed
# key with the seed's type on reports of a PASS, a precision FAIL (bisection's earliest
# boundary apart from k), a structural FAIL, a runtime FAIL and an ERROR run of the fault
# zoo's op; the default tolerance (atol = rtol = 1e-3) is in the report and on every
# result line. With numpy: the pypto layout — `--op-dir custom/<op>` without --report
# writes custom/<op>/eval/evaluation_report.json (the seed's place), --report-dir
# still wins.
#   seed_report.sh PHASEGATE PYTHON FZ_OP_DIR OUT_DIR NONE_SO TRANSPOSED_SO
#                  MISSING_WRAPPER_SO CRASH_SO [PYPTO_DATA_DIR]
set -u
pg=$1 py=$2 op=$3 out=$4 none=$5 transposed=$6 nowrapper=$7 crash=$8 pypto=${9:-}
schema="$(cd "$(dirname "$0")" && pwd)/seed_schema.py"
rm -rf "$out" && mkdir -p "$out/op" || exit 1
# the fault zoo's op without its contract tolerance: 'scores' and 'probs' then have none
# anywhere, so the default applies
cp "$op/adversarial_suite.json" "$out/op/" &&
  sed '/^tolerance:/d' "$op/module_interfaces.yaml" >"$out/op/module_interfaces.yaml" || exit 1
grep -q '^tolerance:' "$op/module_interfaces.yaml" || { echo "the fixture changed"; exit 1; }
fz_op=$op op=$out/op
fails=0
fail() { echo "FAIL: $*"; fails=1; }

# run NAME WANT_EXIT ARGS... : phasegate run into $out/NAME.json, console in $out/NAME.txt
run() {
  name=$1 want=$2
  shift 2
  "$pg" run --op-dir "$op" --report "$out/$name.json" --no-golden-cache "$@" >"$out/$name.txt" 2>&1
  got=$?
  [ "$got" -eq "$want" ] || { cat "$out/$name.txt"; fail "$name: exit $got, expected $want"; }
}
schema() { "$py" "$schema" "$@" || fails=1; }

run pass 0 --impl "plugin:$none" --up-to-module 2
# no tolerance anywhere for 'probs' (float16): the seed's 1e-3
schema "$out/pass.json" --status PASS --k 2 --tolerance 0.001,0.001
run precision 1 --impl "plugin:$transposed" --up-to-module 2
schema "$out/precision.json" --status FAIL --category precision --k 2 --earliest 1
run structural 2 --impl "plugin:$nowrapper" --up-to-module 3
schema "$out/structural.json" --status ERROR --category structural --k 3 --earliest null
run runtime 1 --impl "plugin:$crash" --up-to-module 3
schema "$out/runtime.json" --status FAIL --category runtime --k 3 --earliest null
# ERROR: a --golden-data reference that does not match the boundary (the runner's problem)
run save 0 --impl "plugin:$none" --up-to-module 1 --case L2_basic --save-data "$out/data"
cp "$out/data/L2_basic/out/scores.npy" "$out/data/L2_basic/out/probs.npy"
run error 2 --impl "plugin:$none" --up-to-module 2 --case L2_basic --golden-data "$out/data"
schema "$out/error.json" --status ERROR --category infra --k 2 --earliest null

# Every value-checked result line prints its tolerance; the first-failure line keeps the
# phase's boundary and names bisection's finding.
grep -qE '^\[PASS\] attention M2 L2_basic sim  .*max_abs .*\(atol 1e-3 rtol 1e-3\)  [0-9.]+ ms$' \
  "$out/pass.txt" || { cat "$out/pass.txt"; fail "no '(atol 1e-3 rtol 1e-3)' on the PASS line"; }
grep -qE "^\[FAIL\] attention M2 L2_basic sim  precision: .*\(atol 1e-3 rtol 1e-3\)  [0-9.]+ ms$" \
  "$out/precision.txt" || { cat "$out/precision.txt"; fail "no tolerance on the FAIL line"; }
grep -qF '[phasegate] first failure: L2_basic (precision, boundary M2, earliest failing M1, all_fail)' \
  "$out/precision.txt" || { cat "$out/precision.txt"; fail "first-failure line"; }

if [ -n "$pypto" ]; then
  # The pypto layout, run from a copy (the source tree stays clean), in the seed's
  # subcommand-less spelling.
  mkdir -p "$out/tree/custom" && cp -R "$pypto/custom/rms_gate" "$out/tree/custom/" || exit 1
  cd "$out/tree" || exit 1
  impl="exec:$py custom/rms_gate/impl.py"
  "$pg" --op-dir custom/rms_gate --impl "$impl" --up-to-module 1 --no-golden-cache \
    >"$out/layout.txt" 2>&1 || { cat "$out/layout.txt"; fail "pypto layout run"; }
  r=custom/rms_gate/eval/evaluation_report.json
  [ -f "$r" ] || fail "no $r"
  [ -e phasegate-reports ] && fail "a pypto op dir wrote ./phasegate-reports"
  grep -qF "report: custom/rms_gate/eval/evaluation_report.json" "$out/layout.txt" ||
    { cat "$out/layout.txt"; fail "the summary does not name $r"; }
  [ -f "$r" ] && schema "$r" --status PASS --k 1
  # the next phase replaces it, as the seed's runner does; a bug at M2 fails at k = 2
  "$pg" run --op-dir custom/rms_gate --impl "$impl --bug" --up-to-module 2 --no-golden-cache \
    >"$out/layout2.txt" 2>&1
  [ $? -eq 1 ] || { cat "$out/layout2.txt"; fail "pypto layout bug run"; }
  [ -f "$r" ] && schema "$r" --status FAIL --category precision --k 2 --earliest 2
  # --report-dir is an explicit choice: the usual <dir>/<op>/M<k>/ layout
  "$pg" run --op-dir custom/rms_gate --impl "$impl" --up-to-module 1 --report-dir rd \
    --no-golden-cache >"$out/layout3.txt" 2>&1 || { cat "$out/layout3.txt"; fail "--report-dir run"; }
  [ -f rd/rms_gate/M1/evaluation_report.json ] || fail "--report-dir ignored for a pypto op dir"
  # the flat layout keeps ./phasegate-reports/<op>/M<k>/
  "$pg" run --op-dir "$fz_op" --impl "plugin:$none" --up-to-module 1 --case L2_basic \
    --no-golden-cache >"$out/flat.txt" 2>&1 || { cat "$out/flat.txt"; fail "flat layout run"; }
  [ -f phasegate-reports/attention/M1/evaluation_report.json ] || fail "flat layout default path"
fi
[ $fails -eq 0 ] && echo "seed report checks passed"
exit $fails
