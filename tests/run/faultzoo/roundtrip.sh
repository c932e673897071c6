#!/bin/sh
# --save-data writes inputs + golden; --golden-data reruns on exactly those tensors;
# replay:DIR compares dumped outputs (here: the saved golden itself, so it must pass,
# and a mode without a dump is SKIPPED).
#   roundtrip.sh PHASEGATE FZ_CHECK OUTDIR OP_DIR GOOD_PLUGIN BAD_PLUGIN
set -u
pg=$1 check=$2 out=$3 op=$4 good=$5 bad=$6
rm -rf "$out" && mkdir -p "$out"
"$pg" run --op-dir "$op" --impl "plugin:$good" --up-to-module 1 --save-data "$out/data" \
  --report "$out/r1.json" --no-golden-cache || exit 1
for f in in/q.npy in/k.npy in/v.npy out/scores.npy; do
  [ -f "$out/data/L2_basic/$f" ] || { echo "missing $out/data/L2_basic/$f"; exit 1; }
done
"$pg" run --op-dir "$op" --impl "plugin:$good" --up-to-module 1 --golden-data "$out/data" \
  --report "$out/r2.json" || exit 1
"$check" "$out/r2.json" status=PASS cases_passed=3 || exit 1
# pypto layout: DIR/in + DIR/out for a single case
"$pg" run --op-dir "$op" --impl "plugin:$bad" --up-to-module 1 --case L2_basic \
  --golden-data "$out/data/L2_basic" --report "$out/r3.json"
[ $? -eq 1 ] || { echo "transposed impl on golden data should fail"; exit 1; }
"$check" "$out/r3.json" status=FAIL first.failure_category=precision || exit 1
# a reference that does not match the boundary is the runner's problem (ERROR), not the impl's
cp "$out/data/L2_basic/out/scores.npy" "$out/data/L2_basic/out/probs.npy"
"$pg" run --op-dir "$op" --impl "plugin:$good" --up-to-module 2 --case L2_basic \
  --golden-data "$out/data" --report "$out/r5.json" >"$out/r5.txt" 2>&1
[ $? -eq 2 ] || { echo "mismatching reference should be an ERROR"; cat "$out/r5.txt"; exit 1; }
grep -q "reference 'probs' is float32" "$out/r5.txt" || { cat "$out/r5.txt"; exit 1; }
"$check" "$out/r5.json" status=ERROR first.failure_category=infra || exit 1
mkdir -p "$out/replay/L2_basic/sim"
cp "$out/data/L2_basic/out/scores.npy" "$out/replay/L2_basic/sim/scores.npy"
"$pg" run --op-dir "$op" --impl "replay:$out/replay" --up-to-module 1 --case L2_basic \
  --modes sim,npu --report "$out/r4.json" --no-golden-cache || exit 1
exec "$check" "$out/r4.json" status=PASS mode.sim=PASS mode.npu=SKIPPED
