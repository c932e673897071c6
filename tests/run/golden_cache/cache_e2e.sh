#!/bin/sh
# The golden cache end to end through `phasegate run`: a re-run of a case hits it (the
# report says golden_cached: true), and each change docs/design.md §5 keys it by — reference
# precision, case, golden library contents, contract contents — misses it, as does
# --no-golden-cache. Works on a private copy of an op dir and a private cache.
#   cache_e2e.sh PHASEGATE WORK_DIR OP_DIR IMPL_SO GOLDEN_SO
set -u
pg=$1 work=$2 src=$3 impl=$4 glib=$5
rm -rf "$work" && mkdir -p "$work/op" && cd "$work" || exit 1
cp "$src/module_interfaces.yaml" "$src/adversarial_suite.json" op/ || exit 1
cp "$glib" golden.so || exit 1
export PHASEGATE_CACHE_DIR="$work/cache"
unset PHASEGATE_CACHE_MAX_BYTES
fails=0
fail() { echo "FAIL: $*"; fails=1; }

# expect HIT|MISS WHAT ARGS...: one run of case $case_id, exit 0, and whether its golden
# came from the cache
expect() {
  want=$1 what=$2
  shift 2
  rm -f r.json  # a report merges by case id: start each run from none
  "$pg" run --op-dir op --impl "plugin:$impl" --golden-lib golden.so --up-to-module 1 \
    --case "$case_id" --report r.json "$@" >out.txt 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || { fail "$what: phasegate run exited $rc: $(cat out.txt)"; return; }
  if grep -q '"golden_cached":[[:space:]]*true' r.json; then got=HIT; else got=MISS; fi
  grep -q '"golden_cached":' r.json || fail "$what: no golden_cached in the report"
  [ "$got" = "$want" ] || fail "$what: expected a cache $want, got a $got"
}

case_id=L2_default
expect MISS "first run"
expect HIT "same run again"
expect MISS "fp64 reference" --reference-precision fp64
expect HIT "fp64 again" --reference-precision fp64
case_id=L2_fp32
expect MISS "another case"
case_id=L2_default
expect HIT "first case again"
expect MISS "--no-golden-cache" --no-golden-cache
printf '\n' >>golden.so  # same path, other contents: a rebuilt golden library
expect MISS "golden library changed"
expect HIT "golden library again"
printf '# edited\n' >>op/module_interfaces.yaml
expect MISS "contract changed"
expect HIT "contract again"
exit $fails
