# Sourced by the pypto shell tests: step WANT_EXIT NEEDLE ARGS... runs "$pg" ARGS,
# keeps the output in "$out/o.txt", checks the exit status and that the output holds
# NEEDLE, prints ok:/FAIL: and sets fails=1 on a failure.
step() {
  want=$1 needle=$2
  shift 2
  "$pg" "$@" >"$out/o.txt" 2>&1
  got=$?
  if [ "$got" -ne "$want" ] || ! grep -qF -- "$needle" "$out/o.txt"; then
    echo "FAIL: phasegate $* -> exit $got (want $want, output should contain '$needle'):"
    cat "$out/o.txt"
    fails=1
  else
    echo "ok: phasegate $*"
  fi
}
