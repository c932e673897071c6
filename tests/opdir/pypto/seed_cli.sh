#!/bin/sh
# The seed's command line as the pypto workflow runs it, from custom/<op>/eval/ with the
# contract and the suite in ./ and no --op-dir (docs/pypto.md, "The seed runner's
# flags"): on a copy of the bundled op suites/pypto/custom/ln_ffn_silu,
#   phasegate run --suite adversarial_suite.json --impl ../modules/<x>_impl.py --up-to-module 1
# and the seed's spelling without the subcommand (and --self-test) exit 0 and write
# ./evaluation_report.json (eval/, where the seed writes it, not ./phasegate-reports/);
# a bare .py is a python: impl; a bare .py that does not exist is exit 2 naming it; a
# directory without module_interfaces.yaml still asks for --op-dir / --contract, naming
# where it looked. The op directory is unchanged apart from the reports (and their
# history/, runner.md).
#   seed_cli.sh PHASEGATE PYTHON WORKSPACE OUT_DIR
set -u
pg=$1 py=$2 src=$3 out=$4
op=ln_ffn_silu
rm -rf "$out" && mkdir -p "$out/ws" "$out/empty" || exit 1
cp -R "$src/custom" "$out/ws/" || exit 1
export PHASEGATE_PYTHON="$py" PYTHONDONTWRITEBYTECODE=1
export PHASEGATE_CACHE_DIR="$out/cache"
fails=0
. "$(dirname "$0")/step.sh"   # step WANT_EXIT NEEDLE ARGS...
impl=../modules/${op}_module1_impl.py

# The report's keys as the seed's: the bare path recorded as given, phase 1, PASS.
check_report() {
  "$py" - "$1" "$impl" <<'EOF' || { echo "FAIL: $1"; fails=1; }
import json, sys
r = json.load(open(sys.argv[1]))
want = {"impl_file": sys.argv[2], "up_to_module": 1, "status": "PASS", "op_name": "ln_ffn_silu"}
bad = {k: r.get(k) for k, v in want.items() if r.get(k) != v}
assert not bad, f"report keys {bad}, want {want}"
EOF
}

cd "$out/ws/custom/$op/eval" || exit 1
step 0 "report: ../eval/evaluation_report.json" run --suite adversarial_suite.json \
  --impl "$impl" --up-to-module 1
if [ -f evaluation_report.json ]; then check_report evaluation_report.json
else echo "FAIL: run: no eval/evaluation_report.json"; fails=1; fi
[ ! -e phasegate-reports ] || { echo "FAIL: run wrote ./phasegate-reports/"; fails=1; }
mv evaluation_report.json "$out/run.json" 2>/dev/null

# The seed's own spelling: no subcommand.
step 0 "$op M1: PASS" --suite adversarial_suite.json --impl "$impl" --up-to-module 1
if [ -f evaluation_report.json ]; then check_report evaluation_report.json
else echo "FAIL: seed spelling: no eval/evaluation_report.json"; fails=1; fi
mv evaluation_report.json "$out/seed.json" 2>/dev/null
step 0 "$op: PASS" --self-test

# A bare .py that does not exist: refused before any case, naming the file.
step 2 "impl python file '../modules/nope_impl.py' does not exist" \
  --suite adversarial_suite.json --impl ../modules/nope_impl.py --up-to-module 1
step 2 "impl python file '../modules/nope_impl.py' does not exist" \
  run --impl ../modules/nope_impl.py --up-to-module 1
rm -f evaluation_report.json # the refusal's ERROR report

# From the op directory, --suite's directory holds the contract.
cd .. || exit 1
step 0 "report: ./eval/evaluation_report.json" run --suite eval/adversarial_suite.json \
  --impl modules/${op}_module1_impl.py --up-to-module 1 --case smoke
rm -f eval/evaluation_report.json

# Nothing to find: the old question, and where phasegate looked.
cd "$out/empty" || exit 1
step 2 "--op-dir DIR or --contract FILE is required (no module_interfaces.yaml in the current directory" \
  run --suite adversarial_suite.json --impl "$impl" --up-to-module 1
step 2 "no module_interfaces.yaml in --suite's directory $out/ws/custom/$op/ nor in the current directory" \
  --suite "$out/ws/custom/$op/adversarial_suite.json" --impl "$impl" --up-to-module 1

# The copy is unchanged.
cd "$out/ws" || exit 1
diff -r -x __pycache__ -x history "$src/custom" custom >"$out/diff.txt" 2>&1 ||
  { echo "FAIL: the op directory changed:"; cat "$out/diff.txt"; fails=1; }
exit $fails
