#!/bin/sh
# golden_fallback end to end: an impl that returns the reference. A correct run saves
# the case's golden (--save-data), a replay directory serves that golden as the impl's
# output, and the PASS it gets is flagged golden_fallback (bit-exact on a GELU output).
#   fallback.sh PYTHON PHASEGATE OUTDIR OPDIR IMPL
set -u
py=$1 pg=$2 out=$3 op=$4 impl=$5
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out" && mkdir -p "$out"
"$pg" run --op-dir "$op" --impl "$impl" --up-to-module 1 --case L2_basic \
  --save-data "$out/data" --report "$out/first.json" --no-golden-cache >/dev/null 2>&1 || {
  echo "fallback.sh: the correct run failed"; exit 1; }
mkdir -p "$out/replay/L2_basic/sim"
cp "$out/data/L2_basic/out/y.npy" "$out/replay/L2_basic/sim/y.npy" || exit 1
"$pg" run --op-dir "$op" --impl "replay:$out/replay" --up-to-module 1 --case L2_basic \
  --report "$out/report.json" --no-golden-cache >"$out/console.txt" 2>&1
got=$?
cat "$out/console.txt"
[ "$got" -eq 0 ] || { echo "fallback.sh: replay run exited $got, expected 0"; exit 1; }
exec "$py" "$here/check_report.py" "$out/report.json" "$out/console.txt" status=PASS \
  hint=golden_fallback "detail~=uses gelu" "console~=looks golden_fallback"
