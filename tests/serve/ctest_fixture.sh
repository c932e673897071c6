#!/bin/sh
# `phasegate serve` under a real CTest (docs/design.md §10): a generated test directory with the
# <op>/workers/start|stop fixture pair around 8 case tests on 2 devices (CTest resource
# groups), run with `ctest -j4`. The case tests (serve_client) lease from the daemon; the
# run must not hang on the detached daemon's stdio, each device must be served by one warm
# process, and nothing may be left running after the stop fixture. Then `ctest -FA`
# (fixtures skipped): every case runs standalone, with the same results.
#   ctest_fixture.sh PHASEGATE SERVE_CLIENT SERVE_WORKER WORKDIR
set -u
pg=$1 client=$2 worker=$3 work=$4
tag="fixture-$$"
spec="worker:exec $worker --tag $tag"
ctl="$work/phasegate-serve/op"
rm -rf "$work" && mkdir -p "$work" || exit 1
fail() { echo "FAIL: $*"; "$pg" serve --control "$ctl" --stop >/dev/null 2>&1; exit 1; }
# a ctest output, and the log of every worker it names (one that ended early: what it
# wrote is the first thing to read)
show() {
  cat "$1"
  for log in $(sed -n 's/.*its log: \([^)]*\)).*/\1/p' "$1"); do
    echo "--- $log"; cat "$log"
  done
}

cat >"$work/resources.json" <<JSON
{"version": {"major": 1, "minor": 0},
 "local": [{"gpus": [{"id": "0", "slots": 1}, {"id": "1", "slots": 1}]}]}
JSON
{
  echo "add_test(op/workers/start \"$pg\" serve --control \"$ctl\" --impl \"$spec\" --devices 0,1 --idle-timeout 300)"
  echo "set_tests_properties(op/workers/start PROPERTIES FIXTURES_SETUP op_workers)"
  echo "add_test(op/workers/stop \"$pg\" serve --control \"$ctl\" --stop)"
  echo "set_tests_properties(op/workers/stop PROPERTIES FIXTURES_CLEANUP op_workers)"
  for i in 1 2 3 4 5 6 7 8; do
    echo "add_test(op/M1/L1/case$i \"$client\" \"$ctl\" \"$spec\" \"$work/served.log\" case$i)"
    echo "set_tests_properties(op/M1/L1/case$i PROPERTIES FIXTURES_REQUIRED op_workers RESOURCE_GROUPS gpus:1 PASS_REGULAR_EXPRESSION \"result: sim [01]\")"
  done
} >"$work/CTestTestfile.cmake"

start=$(date +%s)
timeout 120 ctest --test-dir "$work" -j4 --resource-spec-file "$work/resources.json" \
  --output-on-failure >"$work/ctest1.txt" 2>&1 || { show "$work/ctest1.txt"; fail "ctest -j4 with the daemon"; }
took=$(( $(date +%s) - start ))
[ "$took" -lt 60 ] || fail "ctest took ${took}s: did it wait for the daemon's stdio?"
cat "$work/served.log"
[ "$(grep -c 'via=leased' "$work/served.log")" = 8 ] || fail "not every case was leased"
# one warm process per device: two pids in all, each always on the same device
[ "$(sed 's/.*pid=\([0-9]*\).*/\1/' "$work/served.log" | sort -u | wc -l)" = 2 ] ||
  fail "expected one process per device"
[ "$(sed 's/.*pid=\([0-9]*\) device=\([^ ]* [0-9]*\).*/\1 \2/' "$work/served.log" | sort -u | wc -l)" = 2 ] ||
  fail "a process served two devices"
# the 8 calls were spread over the two warm processes: 2 calls each, counted across tests
[ "$(sed 's/.*calls=\([0-9]*\).*/\1/' "$work/served.log" | sort -n | tail -1)" -ge 4 ] ||
  fail "processes were not reused"
sleep 0.2
if pgrep -f -- "--tag $tag" >/dev/null || pgrep -f -- "--control $ctl" >/dev/null; then
  pgrep -fa -- "$tag"; fail "something is still running after the stop fixture"
fi
# what each case saw: the worker ran on the device CTest gave the case
check_devices() {
  grep -vE 'device=sim ([0-9]+) calls=[0-9]+ alloc=\1$' "$work/served.log" && fail "a case ran on another device"
  sed 's/ .*//' "$work/served.log" | sort
}
check_devices >"$work/results1.txt"

rm -f "$work/served.log"
timeout 120 ctest --test-dir "$work" -j4 --resource-spec-file "$work/resources.json" -FA '.*' \
  -E workers --output-on-failure >"$work/ctest2.txt" 2>&1 || { show "$work/ctest2.txt"; fail "ctest -FA"; }
[ "$(grep -c 'via=standalone' "$work/served.log")" = 8 ] || fail "-FA cases did not run standalone"
check_devices >"$work/results2.txt"
cmp -s "$work/results1.txt" "$work/results2.txt" || fail "standalone results differ from served ones"
pgrep -f -- "--tag $tag" >/dev/null && fail "a standalone worker was left running"
echo "ok: 8 cases leased from one warm process per device under ctest -j4; the same results standalone"
