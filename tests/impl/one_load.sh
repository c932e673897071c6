#!/bin/sh
# tests/impl/one_load.sh PHASEGATE CTOR_COUNT_PLUGIN WORKDIR — how often one single-case
# run loads the plugin (its constructor appends a line per load): once with the plugin
# host, whose load doubles as the one-time load probe (docs/runner.md "Cost of the
# one-time impl check"); twice with --fresh-process (the probe child, the call's child).
set -u
pg=$1 plugin=$2 work=$3
rm -rf "$work" && mkdir -p "$work/op" || exit 1
cat > "$work/op/module_interfaces.yaml" <<'YAML'
schema_version: 1
op: fake
primary_inputs:
  - {name: x, shape: [4], dtype: float32}
modules:
  - id: 1
    name: m1
    inputs: [{name: x, source: primary}]
    outputs: [{name: y, shape: [4], dtype: float32}]
    golden:
      - y = relu(x)
final_outputs: [{name: y, source: module_1}]
YAML
printf '{"op": "fake", "total_modules": 1, "cases": [{"id": "a", "level": 1, "precision": false}]}\n' \
  > "$work/op/adversarial_suite.json"
fails=0
loads() { # loads EXPECTED LABEL ARGS...: runs once, counts the constructor's lines
  want=$1 label=$2
  shift 2
  rm -f "$work/count"
  PG_CTOR_COUNT_FILE="$work/count" PHASEGATE_CACHE_DIR="$work/cache" \
    "$pg" run --op-dir "$work/op" --impl "plugin:$plugin" --up-to-module 1 \
    --report "$work/r.json" "$@" > "$work/out.txt" 2>&1
  rc=$?
  got=$(cat "$work/count" 2>/dev/null | wc -l)
  if [ "$got" -eq "$want" ] && [ "$rc" -ne 2 ]; then
    echo "ok: $label: $got load(s) (exit $rc)"
  else
    echo "FAIL: $label: $got load(s), expected $want (exit $rc)"
    cat "$work/out.txt"
    fails=$((fails + 1))
  fi
}
loads 1 "plugin host (the probe is the host's load)"
loads 2 "--fresh-process (probe child + call child)" --fresh-process
[ "$fails" -eq 0 ] && echo "all ok"
exit "$fails"
