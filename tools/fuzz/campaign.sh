#!/usr/bin/env bash
# tools/fuzz/campaign.sh — a fuzzing campaign: every libFuzzer harness (or the ones
# named), one after the other, each for SECONDS on one core, then a table of what each
# run did (docs/testing.md "Fuzzing campaigns").
#
#   tools/fuzz/campaign.sh [--save] [SECONDS] [HARNESS...]
#
#   SECONDS   per harness (default 600)
#   HARNESS   contract, expr, npy, ... (default: every tools/fuzz/fuzz_<name>.c)
#   --save    replace tests/fuzz-corpus/<name>/ by the run's minimized corpus
#             (libFuzzer -merge=1 of the seeds and what the run found); files named
#             regress-* (inputs that once crashed a harness) are always kept
#
# Needs the harnesses built: cmake --preset asan && cmake --build --preset asan.
# Environment: BUILD (default build/asan), OUT (default $BUILD/fuzz-campaign), RSS_MB
# (default 2048). One process at a time, one core each: the machine stays usable.
# A run that finds a crash stops there; the input is kept as $OUT/<name>/crash-*
# (and the row says so). Exit status: 1 when any run found something, else 0.
set -u
cd "$(dirname "$0")/../.."
src=$PWD

save=0
if [ "${1:-}" = "--save" ]; then save=1; shift; fi
secs=600
case "${1:-}" in
  ''|*[!0-9]*) ;;
  *) secs=$1; shift ;;
esac
build=${BUILD:-build/asan}
out=${OUT:-$build/fuzz-campaign}
rss=${RSS_MB:-2048}

if [ $# -eq 0 ]; then
  set --
  for f in tools/fuzz/fuzz_*.c; do
    n=${f##*/fuzz_}
    set -- "$@" "${n%.c}"
  done
fi

mkdir -p "$out"
table="$out/table.md"
printf '| harness | time (s) | executions | exec/s | cov | ft | corpus (files) | findings |\n' >"$table"
printf '|---|---|---|---|---|---|---|---|\n' >>"$table"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0

for name in "$@"; do
  bin="$build/tools/fuzz/fuzz_$name"
  if [ ! -x "$bin" ]; then
    echo "campaign: $bin is not built (cmake --build --preset asan)" >&2
    status=1
    continue
  fi
  dir="$out/$name"
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/min"
  seeds="tests/fuzz-corpus/$name"
  args=(-max_total_time="$secs" -rss_limit_mb="$rss" -timeout=10 -print_final_stats=1
        -artifact_prefix="$dir/")
  [ -f "tools/fuzz/fuzz_$name.dict" ] && args+=(-dict="tools/fuzz/fuzz_$name.dict")
  dirs=("$dir/corpus")
  [ -d "$seeds" ] && dirs+=("$seeds")
  echo "campaign: $name for ${secs}s (log: $dir/fuzz.log)" >&2
  start=$(date +%s)
  "$bin" "${args[@]}" "${dirs[@]}" >"$dir/fuzz.log" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  # libFuzzer's final stats and its last status line (cov = edges, ft = features)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/fuzz.log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$dir/fuzz.log" | tail -1)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
  crashes=$(find "$dir" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' \
              -o -maxdepth 1 -name 'timeout-*' -o -maxdepth 1 -name 'oom-*' | wc -l)
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    findings="$crashes input(s), exit $rc: $(grep -m1 -E 'ERROR: |runtime error|deadly signal' "$dir/fuzz.log" | cut -c1-120)"
    status=1
  else
    findings=none
  fi
  # minimized corpus: the seeds plus what this run found
  "$bin" -merge=1 -rss_limit_mb="$rss" -timeout=10 "$dir/min" "${dirs[@]}" >"$dir/merge.log" 2>&1
  nmin=$(find "$dir/min" -type f | wc -l)
  if [ "$save" = 1 ] && [ "$nmin" -gt 0 ]; then
    # inputs that once crashed a harness stay, whatever they add to coverage today
    mkdir -p "$dir/regress"
    find "$seeds" -maxdepth 1 -name 'regress-*' -exec cp {} "$dir/regress/" \; 2>/dev/null
    rm -rf "$seeds"
    mkdir -p "$seeds"
    cp "$dir/min"/* "$seeds/"
    cp "$dir/regress"/* "$seeds/" 2>/dev/null
  fi
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$took" "${execs:-?}" \
    "${rate:-?}" "${cov:-?}" "${ft:-?}" "$nmin" "$findings" >>"$table"
  tail -1 "$table" >&2
done

echo
echo "Fuzzing campaign, $(date -u +%Y-%m-%d), $(nproc) cores, ${secs}s per harness:"
cat "$table"
exit $status
