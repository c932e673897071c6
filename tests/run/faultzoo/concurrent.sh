#!/bin/sh
# Three `phasegate run --case X` processes of one phase at once, all writing the same
# report in one session (as the case tests of one ctest invocation do): every case must
# be in the merged report, and re-running one case in that session replaces its entry
# instead of duplicating it. A report that cannot be read back is kept as
# .corrupt, with a warning naming it, and a new one started (also from --jobs workers).
#   concurrent.sh PHASEGATE FZ_CHECK OUTDIR OP_DIR GOOD_PLUGIN CRASH_ONE_CASE_PLUGIN
set -u
pg=$1 check=$2 out=$3 op=$4 good=$5 crashy=$6
rm -rf "$out" && mkdir -p "$out"
echo "session-1" >"$out/session"
for c in L1_canonical L2_basic L2_fp32; do
  "$pg" run --op-dir "$op" --impl "plugin:$crashy" --up-to-module 3 --case $c \
    --report-dir "$out/reports" --report-session "$out/session" --no-golden-cache \
    >"$out/$c.txt" 2>&1 &
done
wait
cat "$out"/*.txt
r="$out/reports/attention/M3/evaluation_report.json"
"$check" "$r" cases_total=3 cases_passed=2 case.L1_canonical=PASS case.L2_basic=FAIL \
  case.L2_fp32=PASS status=FAIL first.case_id=L2_basic || exit 1
# the fix: re-run only the failing case with a good impl
"$pg" run --op-dir "$op" --impl "plugin:$good" --up-to-module 3 --case L2_basic \
  --report-dir "$out/reports" --report-session "$out/session" --no-golden-cache || exit 1
"$check" "$r" cases_total=3 cases_passed=3 status=PASS first_failure=null || exit 1
for jobs in 1 2; do
  printf '{"schema_version": 2, "op_name": "attention",\n  "up_to' >"$r"
  cp "$r" "$out/torn.json"
  "$pg" run --op-dir "$op" --impl "plugin:$good" --up-to-module 3 --case L2_basic --jobs $jobs \
    --report-dir "$out/reports" --no-golden-cache >"$out/corrupt$jobs.txt" 2>&1 || {
    cat "$out/corrupt$jobs.txt"; echo "FAIL: the run after a corrupt report (--jobs $jobs)"; exit 1; }
  grep -q "phasegate: warning: the existing report could not be merged into ($r:2:.*): moved to $r.corrupt, a new report started" \
    "$out/corrupt$jobs.txt" || { cat "$out/corrupt$jobs.txt"; echo "FAIL: no warning (--jobs $jobs)"; exit 1; }
  cmp -s "$out/torn.json" "$r.corrupt" || { echo "FAIL: $r.corrupt is not the old report"; exit 1; }
  "$check" "$r" cases_total=1 cases_passed=1 status=PASS || exit 1
  rm -f "$r.corrupt"
done
echo "ok: merged by 3 processes, one case replaced, a corrupt report kept aside"
