#!/bin/sh
# A malformed eval/test_inputs.py (docs/pypto.md "Inputs from make_inputs") on a copy of
# tests/data/pypto_inputs/custom/knob_mlp: a syntax error, a make_inputs that raises, one
# that returns the wrong kind or count, a missing input, a wrong shape, a wrong dtype, no
# make_inputs at all, a PRIMARY_INPUT_ORDER without a contract input. `validate` gives an
# error at the case for each, and `run` (syntax error, wrong shape, a leaky message) an
# ERROR of the case (exit 2), both naming the file, the case and what is wrong; no input
# value reaches a message (the number barrier).
#   make_inputs_errors.sh PHASEGATE PYTHON DATA_DIR OUT_DIR
set -u
pg=$1 py=$2 src=$3 out=$4
op=knob_mlp
rm -rf "$out" && mkdir -p "$out/ws" || exit 1
cp -R "$src/custom" "$out/ws/" || exit 1
export PHASEGATE_PYTHON="$py" PYTHONDONTWRITEBYTECODE=1 PHASEGATE_CACHE_DIR="$out/cache"
fails=0
. "$(dirname "$0")/step.sh"   # step WANT_EXIT NEEDLE ARGS...
cd "$out/ws" || exit 1
d=custom/$op
t=$d/eval/test_inputs.py
cp $t "$out/good.py"
file="$out/ws/$t"

# The bad files need no torch (numpy arrays are inputs too): the worker skips importing
# it, so each case costs one interpreter start, not a torch import.
export PHASEGATE_PYTHON_NO_TORCH=1
# bad KIND NEEDLE [run]: test_inputs.py from stdin; validate (and with "run", run) must
# say NEEDLE, naming the file and the case
bad() {
  kind=$1 needle=$2
  cat > $t
  step 2 "adversarial_suite.json:5:5: error: $file (case 'smoke')" validate --op-dir $d --python "$py"
  grep -qF -- "$needle" "$out/o.txt" || { echo "FAIL: $kind: validate does not say '$needle'"; fails=1; }
  [ $# -gt 2 ] || return 0
  step 2 "$file (case 'smoke'): make_inputs failed" run --op-dir $d --impl python:$d/modules \
    --up-to-module 1 --case smoke --report "$out/$kind.json"
  grep -qF -- "$needle" "$out/o.txt" || { echo "FAIL: $kind: run does not say '$needle':"; cat "$out/o.txt"; fails=1; }
  grep -qF "[ERROR] $op M1 smoke sim" "$out/o.txt" || { echo "FAIL: $kind: not an ERROR line"; fails=1; }
}

bad syntax "SyntaxError: '(' was never closed (test_inputs.py, line 2)" run <<'PY'
import numpy
def make_inputs(case):  oops(
PY
bad raises "ValueError: unknown gate_mode 'sigmoid' (at test_inputs.py:3 in make_inputs)" <<'PY'
import numpy
def make_inputs(case):
    raise ValueError("unknown gate_mode 'sigmoid'")
PY
bad kind "make_inputs returned a int; expected a dict of the inputs by name, or a tuple in the order ['x', 'w', 'mask']" <<'PY'
def make_inputs(case):
    return 42
PY
bad count "make_inputs returned 2 value(s), PRIMARY_INPUT_ORDER has 3" <<'PY'
import numpy as np
def make_inputs(case):
    return np.zeros((4, 8), np.float32), np.zeros((8, 4), np.float32)
PY
bad missing "make_inputs returned no 'mask'" <<'PY'
import numpy as np
def make_inputs(case):
    return {"x": np.zeros((4, 8), np.float32), "w": np.zeros((8, 4), np.float32)}
PY
bad shape "make_inputs: input 'x' has shape" run <<'PY'
import numpy as np
def make_inputs(case):
    return {"x": np.zeros((5, 8), np.float32), "w": np.zeros((8, 4), np.float32),
            "mask": np.zeros(4, np.int32)}
PY
bad dtype "make_inputs: input 'mask' is int64, the contract (with the case's dtype) declares int32" <<'PY'
import numpy as np
def make_inputs(case):
    return {"x": np.zeros((4, 8), np.float32), "w": np.zeros((8, 4), np.float32),
            "mask": np.zeros(4, np.int64)}
PY
bad function "test_inputs.py has no function make_inputs(case)" <<'PY'
def make_input(case):
    return {}
PY
bad order "PRIMARY_INPUT_ORDER ['x', 'w'] lacks the contract's primary input(s) ['mask']" <<'PY'
PRIMARY_INPUT_ORDER = ["x", "w"]
def make_inputs(case):
    return {}
PY
# a leaked value: make_inputs raising with an input's value in its message is redacted
bad barrier "RuntimeError: bad value <redacted>" run <<'PY'
def make_inputs(case):
    raise RuntimeError("bad value 0.123456789")
PY
! grep -qF "0.123456789" "$out/o.txt" "$out/barrier.json" || { echo "FAIL: a value passed the barrier"; fails=1; }
# the good file again: the case runs
unset PHASEGATE_PYTHON_NO_TORCH
cp "$out/good.py" $t
step 0 "$op M1: PASS" run --op-dir $d --impl python:$d/modules --up-to-module 1 --case smoke \
  --report "$out/good.json"
exit $fails
