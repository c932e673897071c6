#!/bin/sh
# The console of `phasegate run` (docs/design.md §8): exactly one status line per case and
# mode with the verdict a reader needs, a repro line under each failure, then the
# summary after every status line — sequentially and with --jobs 3 (lines never mixed).
# Uses the fault zoo's npu_only plugin: sim passes everywhere, npu fails L2_basic and
# L2_fp32 (L1_canonical only checks structure).
#   console.sh PHASEGATE OUTDIR OP_DIR NPU_ONLY_PLUGIN
set -u
pg=$1 out=$2 op=$3 plugin=$4
rm -rf "$out" && mkdir -p "$out" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=1; }

for jobs in 1 3; do
  con="$out/console-$jobs.txt"
  "$pg" run --op-dir "$op" --impl "plugin:$plugin" --up-to-module 3 --modes sim,npu \
    --jobs $jobs --report "$out/report-$jobs.json" --no-golden-cache >"$con" 2>&1
  rc=$?
  cat "$con"
  [ $rc -eq 1 ] || fail "--jobs $jobs: exit $rc, expected 1"
  n=$(grep -cE '^\[(PASS|FAIL|ERROR|SKIP)\] ' "$con")
  [ "$n" -eq 6 ] || fail "--jobs $jobs: $n status lines, expected 6 (3 cases x 2 modes)"
  for c in L1_canonical L2_basic L2_fp32; do
    for m in sim npu; do
      want=PASS
      [ "$m" = npu ] && [ "$c" != L1_canonical ] && want=FAIL
      k=$(grep -cE "^\[$want\] attention M3 $c $m  [^ ]" "$con")
      [ "$k" -eq 1 ] || fail "--jobs $jobs: $k lines '[$want] attention M3 $c $m', expected 1"
    done
    # the failing case's npu line names the category and boundary, then (after its
    # indented evidence and hint lines) its repro line
    if [ "$c" != L1_canonical ]; then
      awk -v pat="^\\[FAIL\\] attention M3 $c npu  precision: output 'out' at the M3 boundary" '
        $0 ~ pat { on = 1; next }
        on && /^    / { print; next }
        { on = 0 }' "$con" |
        grep -qE "^    repro: .* run .*--case $c( |$)" ||
        fail "--jobs $jobs: no precision line + repro for $c npu"
    fi
  done
  last_status=$(grep -nE '^\[(PASS|FAIL|ERROR|SKIP)\] ' "$con" | tail -1 | cut -d: -f1)
  summary=$(grep -nE '^\[phasegate\] attention M3: FAIL  1 passed, 2 failed, 0 errors, 0 skipped of 3 case\(s\); report: ' "$con" | cut -d: -f1)
  [ -n "$summary" ] || fail "--jobs $jobs: no summary line"
  [ -n "$summary" ] && [ "$summary" -gt "${last_status:-0}" ] ||
    fail "--jobs $jobs: the summary (line ${summary:-none}) is not after the last status line ($last_status)"
  grep -qE '^\[phasegate\] first failure: L2_basic \(precision, boundary M3, kernel_ok_npu_only\)' "$con" ||
    fail "--jobs $jobs: no first-failure line"
done
exit $fails
