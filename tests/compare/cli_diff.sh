#!/usr/bin/env bash
# tests/compare/cli_diff.sh — CLI tests of `phasegate diff`: exit codes, the human and
# JSON reports, structural mismatches, usage errors and the information barrier
# (no reference value is ever printed). Fixtures are written by pg_cmp_driver.
#   cli_diff.sh PATH/TO/phasegate PATH/TO/pg_cmp_driver
set -u
PG="$1"
DRV="$2"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fails=0
LAST=""

# expect CODE PATTERN... -- ARGS : runs phasegate diff ARGS, checks exit code and
# that every PATTERN (extended regex) occurs in stdout+stderr.
expect() {
  local code="$1"; shift
  local pats=()
  while [ "$1" != "--" ]; do pats+=("$1"); shift; done
  shift
  local out rc
  out="$("$PG" diff "$@" 2>&1)"; rc=$?
  if [ "$rc" != "$code" ]; then
    echo "FAIL: phasegate diff $*: exit $rc, expected $code"; echo "$out"; fails=$((fails + 1)); return
  fi
  for p in "${pats[@]}"; do
    if ! grep -Eq -- "$p" <<<"$out"; then
      echo "FAIL: phasegate diff $*: output lacks /$p/"; echo "$out"; fails=$((fails + 1)); return
    fi
  done
  LAST="$out"
}

w() { "$DRV" write "$T/$1" "$2" "$3" "$4" || { echo "cannot write fixture $1"; exit 2; }; }

w a.npy float32 2x3 1,2,3,4,5,6
w same.npy float32 2x3 1,2,3,4,5,6
w b.npy float32 2x3 1,2,3.0001,4,7.25,6
w t.npy float32 3x2 1,2,3,4,5,6
w h.npy float16 2x3 1,2,3,4,5,6
w i1.npy int32 3 1,2,3
w i2.npy int32 3 1,2,13
w n1.npy float64 4 nan,1,inf,-0.0
w n2.npy float64 4 nan,1,inf,0.0
w z.npy float32 10 0,0,0,0,1,2,3,4,5,6
w bf1.npy bfloat16 4 1,2,3,4
w bf2.npy bfloat16 4 1,2,3.02,4

expect 0 'verdict: PASS' 'mismatches: 0 of 6' 'float32 \[2, 3\]' -- "$T/a.npy" "$T/same.npy"
# the default tolerance is the seed's atol = rtol = 1e-3: 3 vs 3.0001 passes
expect 1 'verdict: FAIL' 'mismatches: 1 of 6' 'atol=0.001, rtol=0.001' \
  'max abs diff: 2.25 at \[1, 1\]' -- "$T/a.npy" "$T/b.npy"
# torch.testing's float32 tolerance only when asked for
expect 1 'verdict: FAIL' 'mismatches: 2 of 6' 'max abs diff: 2.25 at \[1, 1\]' \
  'first mismatches' '\[0, 2\]: 3, ' '\[1, 1\]: 5, 2.25' -- "$T/a.npy" "$T/b.npy" \
  --atol 1e-5 --rtol 1.3e-6
# information barrier: the reference's 7.25 never appears, in either format
if grep -q '7\.25' <<<"$LAST"; then echo "FAIL: reference value leaked"; fails=$((fails + 1)); fi
expect 1 '"verdict":[[:space:]]*"FAIL"' '"mismatches":[[:space:]]*2' '"max_abs_index":' \
  '"first_mismatches":' -- "$T/a.npy" "$T/b.npy" --json --atol 1e-5 --rtol 1.3e-6
if grep -q '7\.25' <<<"$LAST"; then echo "FAIL: reference value leaked (json)"; fails=$((fails + 1)); fi
# tolerances and rules
expect 0 'verdict: PASS' 'atol=3' -- "$T/a.npy" "$T/b.npy" --atol 3
expect 0 'verdict: PASS' -- "$T/a.npy" "$T/b.npy" --rule ratio:0.34 --atol 1e-5 --rtol 1.3e-6
expect 1 'verdict: FAIL' -- "$T/a.npy" "$T/b.npy" --rule ratio:0.3 --atol 1e-5 --rtol 1.3e-6
expect 1 'mismatches: 2 of 6' -- "$T/a.npy" "$T/b.npy" --rule ulp:418
expect 1 'mismatches: 1 of 6' -- "$T/a.npy" "$T/b.npy" --rule ulp:419
expect 1 'mismatches: 2 of 6' -- "$T/a.npy" "$T/b.npy" --rule exact
# structural mismatches are failures, not errors
expect 1 'structural mismatch: shape mismatch: impl \[2, 3\], reference \[3, 2\]' -- "$T/a.npy" "$T/t.npy"
expect 1 'dtype mismatch: impl float16, reference float32' -- "$T/h.npy" "$T/a.npy"
expect 1 '"structural":[[:space:]]*true' -- "$T/a.npy" "$T/t.npy" --json
# integers compare exactly whatever the tolerance
expect 1 'mismatches: 1 of 3' 'max integer difference: 10' 'rule: +exact' -- "$T/i1.npy" "$T/i2.npy" --atol 100
# NaN, Inf, -0
expect 1 'mismatches: 1 of 4' 'NaN: impl 1, reference 1' 'Inf: impl 1, reference 1' -- "$T/n1.npy" "$T/n2.npy"
expect 0 'verdict: PASS' -- "$T/n1.npy" "$T/n2.npy" --equal-nan
# bfloat16 ('<u2' in .npy): the default tolerance is 1e-3 there too, ULP in bfloat16 units
expect 1 'bfloat16 \[4\]' 'rtol=0.001' 'max ulp distance: 1' -- "$T/bf2.npy" "$T/bf1.npy"
expect 0 'rtol=0.016' -- "$T/bf2.npy" "$T/bf1.npy" --rtol 1.6e-2
expect 1 'mismatches: 1 of 4' -- "$T/bf2.npy" "$T/bf1.npy" --rule ulp:0
# mistrusted reference
expect 0 'MISTRUSTED: 40.0% of the reference' -- "$T/z.npy" "$T/z.npy"
expect 0 '"mistrusted":[[:space:]]*true' -- "$T/z.npy" "$T/z.npy" --json
# usage and input errors
expect 0 'usage: phasegate diff' -- --help
expect 2 'expected two tensor files' -- "$T/a.npy"
expect 2 'unknown comparison rule' -- "$T/a.npy" "$T/b.npy" --rule fuzzy
expect 2 'needs a finite number' -- "$T/a.npy" "$T/b.npy" --atol -1
expect 2 'unknown option' -- "$T/a.npy" "$T/b.npy" --frobnicate
expect 2 'missing.npy' -- "$T/a.npy" "$T/missing.npy"
printf 'not a tensor' >"$T/bad.npy"
expect 2 'bad.npy' -- "$T/bad.npy" "$T/a.npy"

# safetensors: an 8-byte little-endian header length, a JSON header, the bytes.
# Tensors x = [1, 2], y = [1, 3] (float32, little-endian).
st() { # st FILE Y1BYTES
  local h='{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}'
  local n=${#h}
  { printf "$(printf '\\x%02x' $((n & 255)) $((n >> 8 & 255)))\\x00\\x00\\x00\\x00\\x00\\x00"
    printf '%s' "$h"
    printf '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x80\x3f'
    printf "$2"; } >"$1"
}
st "$T/s1.safetensors" '\x00\x00\x40\x40'   # y[1] = 3
st "$T/s2.safetensors" '\x00\x00\x40\x40'
st "$T/s3.safetensors" '\x00\x00\x80\x40'   # y[1] = 4
expect 0 'verdict: PASS' -- "$T/s1.safetensors" "$T/s2.safetensors" --name y
expect 1 'mismatches: 1 of 2' 'max abs diff: 1 at \[1\]' -- "$T/s1.safetensors" "$T/s3.safetensors" --name y
expect 0 'verdict: PASS' -- "$T/s1.safetensors" "$T/s3.safetensors" --name x
expect 2 'holds 2 tensors' -- "$T/s1.safetensors" "$T/s3.safetensors"
expect 2 "no tensor named 'z'" -- "$T/s1.safetensors" "$T/s3.safetensors" --name z

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all phasegate diff checks passed"
