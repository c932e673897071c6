#!/usr/bin/env bash
# tools/bench/bench_shard.sh — the fleet's plan and merge (docs/fleet.md "Measured").
#
# 1. Plan quality: a synthetic 10 000-test suite with skewed durations (most tests
#    0.1-2 s, 3 % a heavy tail up to 20 min, placed at random, seeded) balanced over N
#    shards by `phasegate shard plan` (longest first, from the recorded times) against
#    the peer `ctest -I k,,N` (stride: shard k runs tests k, k+N, ...). Figure: longest
#    shard over the mean (1.0 is perfect); the wall time of a sharded run is the longest.
# 2. Merge: 64 shard directories of 1 000 cases each (JUnit + manifest + reports of 10
#    registrations), `phasegate merge` against the peer: a Python script that only reads
#    the same files (json + ElementTree) and writes one JUnit file.
#
#   tools/bench/bench_shard.sh [BUILD_DIR (build-bench)] [tests (10000)] [shards of the merge (64)]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build-bench}"
N_TESTS="${2:-10000}"
N_MERGE="${3:-64}"
PY="${PYTHON:-/usr/bin/python3}"

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPHASEGATE_BUILD_TESTS=OFF \
        -DPHASEGATE_BUILD_EXAMPLES=OFF >/dev/null
fi
ninja -C "$BUILD" phasegate >/dev/null
PG="$BUILD/runner/phasegate"
TMP="$(mktemp -d)"
[ -n "${KEEP:-}" ] && echo "keeping $TMP" || trap 'rm -rf "$TMP"' EXIT

# ---- 1. plan quality
"$PY" - "$N_TESTS" "$TMP" <<'PYEOF'
import json, random, sys
n, tmp = int(sys.argv[1]), sys.argv[2]
rng = random.Random(22)
tests, times = [], {}
for i in range(n):
    name = f"op{i % 50}/M{1 + i % 3}/L{1 + i % 5}/case{i}"
    tests.append({"name": name, "properties": [{"name": "LABELS", "value": ["phasegate"]}]})
    times[name] = rng.uniform(0.1, 2.0) if rng.random() > 0.03 else min(1200.0, 10 * rng.paretovariate(1.2))
json.dump({"kind": "ctestInfo", "version": {"major": 1, "minor": 0}, "tests": tests}, open(f"{tmp}/tests.json", "w"))
json.dump({"tests": times}, open(f"{tmp}/times.json", "w"))
PYEOF
echo "plan quality, $N_TESTS tests (longest shard / mean; 1.00 is perfect):"
printf "  %-7s %-22s %-22s %-14s %s\n" shards "phasegate shard plan" "ctest -I stride (peer)" "lower bound" "plan time"
for S in ${PLAN_SHARDS:-4 16 64 256}; do
  t0=$(date +%s.%N)
  "$PG" shard plan --build-dir "$TMP" --tests-json "$TMP/tests.json" --times "$TMP/times.json" \
        --shards "$S" --out "$TMP/plan$S" >/dev/null
  t1=$(date +%s.%N)
  "$PY" - "$TMP/plan$S/plan.json" "$TMP/times.json" "$S" "$t0" "$t1" <<'PYEOF'
import json, sys
plan, times, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["tests"], int(sys.argv[3])
names = [t["name"] for t in plan["tests"]]
ours = [sum(times[n] for n in sh["names"]) for sh in plan["shards"]]
stride = [sum(times[names[i]] for i in range(k, len(names), s)) for k in range(s)]
q = lambda l: max(l) / (sum(l) / len(l))
bound = max(max(times.values()), sum(ours) / s) / (sum(ours) / s)  # no plan beats its longest test
print(f"  {s:<7} {q(ours):<22.3f} {q(stride):<22.3f} {bound:<14.3f} {float(sys.argv[5]) - float(sys.argv[4]):.2f} s "
      f"(longest {max(ours) / 60:.1f} min vs {max(stride) / 60:.1f} min)")
PYEOF
done

# ---- 2. merge
"$PY" - "$N_MERGE" "$TMP/shards" <<'PYEOF'
import json, os, sys
n, root = int(sys.argv[1]), sys.argv[2]
per, regs = 1000, 10
names = [f"op{r}/M1/L2/c{k}_{i}" for k in range(n) for r in range(regs) for i in range(per // regs)]
plan_tests = [{"name": nm, "number": j + 1, "role": "case", "seconds": 1, "shard": j // per} for j, nm in enumerate(names)]
shards = [{"index": k, "predicted_seconds": per, "names": names[k * per:(k + 1) * per],
           "numbers": list(range(k * per + 1, (k + 1) * per + 1))} for k in range(n)]
os.makedirs(root)
json.dump({"schema_version": 1, "fingerprint": "0123456789abcdef", "mode": "per-test", "n_shards": n,
           "tests": plan_tests, "shards": shards}, open(f"{root}/plan.json", "w"))
for k in range(n):
    d = f"{root}/s{k}"
    os.makedirs(d)
    json.dump({"shard": k, "n_shards": n, "fingerprint": "0123456789abcdef", "build_fingerprint": "0123456789abcdef",
               "status": "ran", "host": f"host{k}", "started_at": "2026-01-01T00:00:00Z"}, open(f"{d}/manifest.json", "w"))
    with open(f"{d}/junit.xml", "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="s" tests="1000">\n')
        for nm in shards[k]["names"]:
            f.write(f'\t<testcase name="{nm}" classname="{nm}" time="0.5" status="run">\n\t\t<system-out>ok</system-out>\n\t</testcase>\n')
        f.write("</testsuite>\n")
    for r in range(regs):
        checks = [{"id": f"c{k}_{i}", "status": "PASS", "level": 2, "suite_index": k * 100 + i,
                   "per_mode_status": {"sim": "PASS"}, "run": {"id": f"run{k}", "host": f"host{k}"}}
                  for i in range(per // regs)]
        os.makedirs(f"{d}/reports/op{r}/M1")
        json.dump({"op_name": f"op{r}", "registration": f"op{r}", "up_to_module": 1, "total_modules": 1,
                   "status": "PASS", "checks": checks, "run": {"id": f"run{k}", "host": f"host{k}"},
                   "selection": {"levels": [2], "cases": [c["id"] for c in checks], "modes": ["sim"]}},
                  open(f"{d}/reports/op{r}/M1/evaluation_report.json", "w"))
PYEOF
cat > "$TMP/peer.py" <<'PYEOF'
import glob, json, os, sys
import xml.etree.ElementTree as ET
root, out = sys.argv[1], sys.argv[2]
suites = ET.Element("testsuites")
for d in sorted(glob.glob(f"{root}/s*")):
    json.load(open(f"{d}/manifest.json"))
    suites.append(ET.parse(f"{d}/junit.xml").getroot())
    for p in glob.glob(f"{d}/reports/*/M*/evaluation_report.json"):
        json.load(open(p))
ET.ElementTree(suites).write(out)
PYEOF
cat > "$TMP/best.py" <<'PYEOF'
import resource, subprocess, sys, time
best = None
for _ in range(3):
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False)
    r1, t1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    best = min(best or (cpu, t1 - t0), (cpu, t1 - t0))
print(f"{best[0]:.2f} {best[1]:.2f}")
PYEOF
read -r C_OURS W_OURS < <("$PY" "$TMP/best.py" "$PG" merge --plan "$TMP/shards/plan.json" --out "$TMP/M" \
                           $(ls -d "$TMP"/shards/s* | sort -V))
read -r C_PEER W_PEER < <("$PY" "$TMP/best.py" "$PY" "$TMP/peer.py" "$TMP/shards" "$TMP/peer.xml")
echo "merge, $N_MERGE shards x 1000 cases (best of 3, CPU time; wall in parentheses):"
echo "  phasegate merge (verdicts, JUnit, 10 combined reports, HTML, times): ${C_OURS} s (${W_OURS} s)"
echo "  peer: Python reading the same files, one JUnit file: ${C_PEER} s (${W_PEER} s)"
awk -v a="$C_OURS" -v b="$C_PEER" 'BEGIN { printf "  ratio: %.2f x the peer (CPU)\n", a / b }'
