#!/bin/sh
# bench_run.sh — wall time of one small case end to end, as a process:
#   phasegate run --up-to-module 3 --case bench (attention, plugin impl attention_impl)
# versus bench_run_peer.py, a Python + numpy script doing the same generate /
# reference / impl / compare / report-write steps, measured in the same run.
# Prints the median of N runs of each and the ratio (goal: phasegate >= 20x faster).
#
#   tools/bench/bench_run.sh [BUILD_DIR] [N]
# Env: PYTHON (default /usr/bin/python3), OP_CONTRACT (default suites/attention's).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
n=${2:-10}
py=${PYTHON:-/usr/bin/python3}
pg="$build/runner/phasegate"
impl="$build/suites/attention/impl/libattention_impl.so"
contract=${OP_CONTRACT:-$root/suites/attention/module_interfaces.yaml}
[ -x "$pg" ] || { echo "bench_run.sh: build phasegate first ($pg)"; exit 2; }
[ -f "$impl" ] || { echo "bench_run.sh: build attention_impl first ($impl)"; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/op"
cp "$contract" "$work/op/module_interfaces.yaml"
# One case at the contract's default dims (B=2 H=4 S=128 D=64).
printf '{"op": "attention", "total_modules": 3, "cases": [{"id": "bench", "level": 2, "seed": 1}]}\n' \
  > "$work/op/adversarial_suite.json"

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

"$pg" run --op-dir "$work/op" --impl "plugin:$impl" --up-to-module 3 --no-golden-cache \
  --report "$work/r.json" >/dev/null || { echo "bench_run.sh: phasegate run failed"; \
  "$pg" run --op-dir "$work/op" --impl "plugin:$impl" --up-to-module 3 --no-golden-cache \
  --report "$work/r.json"; exit 1; }
: > "$work/pg.txt"
: > "$work/py.txt"
# GNU time gives wall and CPU (user + sys, children included) of each process.
tm=/usr/bin/time
[ -x "$tm" ] || { echo "bench_run.sh: needs /usr/bin/time"; exit 2; }
i=0
while [ $i -lt "$n" ]; do
  $tm -a -o "$work/pg.txt" -f "%e %U %S" "$pg" run --op-dir "$work/op" --impl "plugin:$impl" \
    --up-to-module 3 --no-golden-cache --report "$work/r.json" >/dev/null
  $tm -a -o "$work/py.txt" -f "%e %U %S" "$py" "$root/tools/bench/bench_run_peer.py" 2 4 128 64 "$work/p.json"
  i=$((i + 1))
done
pg_wall=$(awk '{print $1}' "$work/pg.txt" | median)
py_wall=$(awk '{print $1}' "$work/py.txt" | median)
pg_cpu=$(awk '{print $2 + $3}' "$work/pg.txt" | median)
py_cpu=$(awk '{print $2 + $3}' "$work/py.txt" | median)
load=$(cut -d' ' -f1 /proc/loadavg)
printf 'case: attention M3, B=2 H=4 S=128 D=64, fp16, plugin impl, %d runs each (median), load %s\n' "$n" "$load"
printf '                                        wall ms   cpu ms (user+sys)\n'
printf '  phasegate run (C, no golden cache):  %7.0f   %7.0f\n' "$(echo "$pg_wall * 1000" | bc -l)" "$(echo "$pg_cpu * 1000" | bc -l)"
printf '  python3 + numpy peer script:         %7.0f   %7.0f\n' "$(echo "$py_wall * 1000" | bc -l)" "$(echo "$py_cpu * 1000" | bc -l)"
printf '  ratio (peer / phasegate):            %7.1fx  %7.1fx\n' "$(echo "$py_wall / $pg_wall" | bc -l)" \
  "$(echo "$py_cpu / ($pg_cpu + 0.005)" | bc -l)"
echo "(GNU time reports 10 ms steps: the CPU ratio adds 5 ms to phasegate's CPU time, a lower bound)"
