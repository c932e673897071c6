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

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

"$pg" run --op-dir "$work/op" --impl "plugin:$impl" --up-to-module 3 --no-golden-cache \
  --report "$work/r.json" >/dev/null || { echo "bench_run.sh: phasegate run failed"; \
  "$pg" run --op-dir "$work/op" --impl "plugin:$impl" --up-to-module 3 --no-golden-cache \
  --report "$work/r.json"; exit 1; }
: > "$work/pg.txt"
: > "$work/py.txt"
i=0
while [ $i -lt "$n" ]; do
  t0=$(now)
  "$pg" run --op-dir "$work/op" --impl "plugin:$impl" --up-to-module 3 --no-golden-cache \
    --report "$work/r.json" >/dev/null
  t1=$(now)
  "$py" "$root/tools/bench/bench_run_peer.py" 2 4 128 64 "$work/p.json"
  t2=$(now)
  echo "$t1 - $t0" | bc -l >> "$work/pg.txt"
  echo "$t2 - $t1" | bc -l >> "$work/py.txt"
  i=$((i + 1))
done
pgm=$(median < "$work/pg.txt")
pym=$(median < "$work/py.txt")
printf 'case: attention M3, B=2 H=4 S=128 D=64, fp16, plugin impl, %d runs each (median)\n' "$n"
printf '  phasegate run (C, fork sandbox, no golden cache): %8.1f ms\n' "$(echo "$pgm * 1000" | bc -l)"
printf '  python3 + numpy peer script:                      %8.1f ms\n' "$(echo "$pym * 1000" | bc -l)"
printf '  ratio (peer / phasegate):                         %8.1fx\n' "$(echo "$pym / $pgm" | bc -l)"
