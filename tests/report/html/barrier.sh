#!/bin/sh
# Information barrier of the HTML page: a run on tensors whose values appear in no
# text (--golden-data: input q = 98765.4321, reference scores = 123456.789; the impl
# prints its inputs and is off by one), rendered by `phasegate report`. The page may
# show metrics, indices and the impl's own values; neither the input nor the
# reference value may appear, in any spelling a renderer would use.
#   barrier.sh PHASEGATE FZ_CHECK OUT_DIR OP_DIR LEAK_PLUGIN
set -u
pg=$1 check=$2 out=$3 op=$4 leak=$5
rm -rf "$out" && mkdir -p "$out/data/in" "$out/data/out" "$out/reports/fz/M1"
"$check" --write-npy "$out/data/in/q.npy" float32 98765.4321 1 2 40 16 || exit 1
"$check" --write-npy "$out/data/in/k.npy" float32 0.001 1 2 40 16 || exit 1
"$check" --write-npy "$out/data/in/v.npy" float32 0.5 1 2 40 16 || exit 1
"$check" --write-npy "$out/data/out/scores.npy" float32 123456.789 1 2 40 40 || exit 1
"$pg" run --op-dir "$op" --impl "plugin:$leak" --up-to-module 1 --case L2_basic \
  --golden-data "$out/data" --report "$out/reports/fz/M1/evaluation_report.json" >"$out/console.txt" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out/console.txt"; echo "FAIL: the run exited $rc, want 1"; exit 1; }
"$pg" report --out "$out/page.html" "$out/reports" || { echo "FAIL: phasegate report exited $?"; exit 1; }
fails=0
grep -qF 'L2_basic' "$out/page.html" || { echo "FAIL: the case is not on the page"; fails=1; }
grep -qF 'leak' "$out/page.html" || { echo "FAIL: the impl is not on the page"; fails=1; }
# the impl's captured output reaches the page (where the values would be), redacted
grep -qF 'q[0] = &lt;redacted&gt;' "$out/page.html" ||
  { echo "FAIL: the captured output is not on the page"; fails=1; }
# 98765.4321 and 123456.789 as %g, %.4g, %.5g, %.9g and %e would spell them
for v in 98765 9.8765 9.877e+04 9.87654e+04 123456 1.23456 1.2346e+05 1.23457e+05; do
  if grep -qF -- "$v" "$out/page.html"; then
    echo "FAIL: '$v' is on the page:"
    grep -oF -- "$v" "$out/page.html" | head -3
    fails=1
  fi
done
[ $fails -eq 0 ] && echo "ok: no input or reference value on the page ($(wc -c <"$out/page.html") bytes)"
exit $fails
