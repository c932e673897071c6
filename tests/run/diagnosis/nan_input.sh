#!/bin/sh
# nan_origin with an input to blame: the case's inputs and reference are saved
# (--save-data), a NaN is planted in input x at [3, 5], and the run on that data
# (--golden-data; the reference stays finite) names input 'x' at the same index, and
# the case's hint points at the input rather than at exp overflow, or what the CHECK
# arguments (check_report.py's) say instead.
#   nan_input.sh PYTHON PHASEGATE OUTDIR OPDIR IMPL [CHECK...]
set -u
py=$1 pg=$2 out=$3 op=$4 impl=$5
shift 5
[ $# -gt 0 ] || set -- status=FAIL hint=nan_origin \
  "detail~=(NaN) is at [3, 5] (1 in all); input 'x' holds 1 non-finite value(s), at the same index" \
  "console~=an input holds NaN/Inf: check how the kernel treats non-finite inputs" \
  "noconsole~=look for exp overflow"
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out" && mkdir -p "$out"
"$pg" run --op-dir "$op" --impl "$impl" --up-to-module 1 --case L2_basic \
  --save-data "$out/data" --report "$out/first.json" --no-golden-cache >/dev/null 2>&1 || {
  echo "nan_input.sh: the correct run failed"; exit 1; }
"$py" -c "
import numpy as np, sys
p = sys.argv[1]
x = np.load(p)
x[3, 5] = np.nan
np.save(p, x)" "$out/data/L2_basic/in/x.npy" || exit 1
"$pg" run --op-dir "$op" --impl "$impl" --up-to-module 1 --case L2_basic \
  --golden-data "$out/data" --report "$out/report.json" --no-golden-cache >"$out/console.txt" 2>&1
got=$?
cat "$out/console.txt"
[ "$got" -eq 1 ] || { echo "nan_input.sh: exited $got, expected 1"; exit 1; }
exec "$py" "$here/check_report.py" "$out/report.json" "$out/console.txt" "$@"
