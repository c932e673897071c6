#!/bin/sh
# Information barrier with tensors that appear in no text: inputs and reference come
# from --golden-data (q = 98765.4321, reference scores = 123456.789); the impl echoes
# its inputs to stdout/stderr. Report and console must show neither value.
#   barrier.sh PHASEGATE FZ_CHECK OUTDIR OP_DIR LEAK_PLUGIN
set -u
pg=$1 check=$2 out=$3 op=$4 leak=$5
rm -rf "$out" && mkdir -p "$out/data/in" "$out/data/out"
"$check" --write-npy "$out/data/in/q.npy" float32 98765.4321 1 2 40 16 || exit 1
"$check" --write-npy "$out/data/in/k.npy" float32 0.001 1 2 40 16 || exit 1
"$check" --write-npy "$out/data/in/v.npy" float32 0.5 1 2 40 16 || exit 1
"$check" --write-npy "$out/data/out/scores.npy" float32 123456.789 1 2 40 40 || exit 1
"$pg" run --op-dir "$op" --impl "plugin:$leak" --up-to-module 1 --case L2_basic \
  --golden-data "$out/data" --report "$out/report.json" >"$out/console.txt" 2>&1
rc=$?
cat "$out/console.txt"
[ $rc -eq 1 ] || { echo "expected exit 1, got $rc"; exit 1; }
exec "$check" "$out/report.json" file="$out/console.txt" status=FAIL \
  absent=98765.4 absent=9.876543e absent=9.87654e+04 absent=123456.7 absent=1.234567e \
  absent=1.23457e+05
