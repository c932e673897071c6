#!/bin/sh
# bench_run.sh — wall time of one small case end to end, as a process:
#   phasegate run --up-to-module 3 --case bench (attention, plugin impl attention_impl)
# versus bench_run_peer.py, a Python + numpy script doing the same generate /
# reference / impl / compare / report-write steps, measured in the same run.
# Prints the median of N runs of each and the ratio (goal: phasegate >= 20x faster), plus
# the start-up floors of both sides (phasegate --version; python3 -c 'import numpy').
# And the same phasegate run with --fresh-process (the plugin forked per call, as before
# the plugin host existed) against the default (the plugin host): a single-case run must
# cost no more through the host than fresh (issue 24; every CTest test is one).
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


"$pg" run --op-dir "$work/op" --impl "plugin:$impl" --up-to-module 3 --no-golden-cache \
  --report "$work/r.json" >/dev/null || { echo "bench_run.sh: phasegate run failed"; \
  "$pg" run --op-dir "$work/op" --impl "plugin:$impl" --up-to-module 3 --no-golden-cache \
  --report "$work/r.json"; exit 1; }
# Alternate the two, N times each; wall time and CPU time (user + sys of the process
# and everything it waited for) per run, from getrusage(RUSAGE_CHILDREN).
"$py" - "$n" "$pg" "$impl" "$work" "$root/tools/bench/bench_run_peer.py" <<'PYEOF'
import os, resource, subprocess, sys, time
n, pg, impl, work, peer = int(sys.argv[1]), *sys.argv[2:]
cmds = {
    "pg": [pg, "run", "--op-dir", work + "/op", "--impl", "plugin:" + impl, "--up-to-module", "3",
           "--no-golden-cache", "--report", work + "/r.json"],
    "py": [sys.executable, peer, "2", "4", "128", "64", work + "/p.json"],
    # floors: process start-up alone on each side
    "fresh": [pg, "run", "--op-dir", work + "/op", "--impl", "plugin:" + impl, "--up-to-module",
              "3", "--no-golden-cache", "--report", work + "/r.json", "--fresh-process"],
    "pg0": [pg, "--version"],
    "py0": [sys.executable, "-c", "import numpy"],
}
res = {k: ([], []) for k in cmds}
for _ in range(n):
    for k, cmd in cmds.items():
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        t1 = time.perf_counter()
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        res[k][0].append((t1 - t0) * 1e3)
        res[k][1].append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e3)
med = lambda v: sorted(v)[len(v) // 2]
(pw, pc), (yw, yc), (p0w, p0c), (y0w, y0c), (fw, fc) = [
    (med(res[k][0]), med(res[k][1])) for k in ("pg", "py", "pg0", "py0", "fresh")]
print(f"case: attention M3, B=2 H=4 S=128 D=64, fp16, plugin impl; {n} runs each, medians; "
      f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
print(f"                                        wall ms   cpu ms (user+sys)")
print(f"  phasegate run (C, no golden cache):  {pw:7.1f}   {pc:7.1f}")
print(f"  python3 + numpy peer script:         {yw:7.1f}   {yc:7.1f}")
print(f"  ratio (peer / phasegate):            {yw / pw:6.1f}x   {yc / pc:6.1f}x")
print(f"  floors: phasegate --version          {p0w:7.1f}   {p0c:7.1f}")
print(f"          python3 -c 'import numpy'    {y0w:7.1f}   {y0c:7.1f}")
print(f"  a 20x ratio needs phasegate run <= {yw / 20:.1f} ms wall ({yc / 20:.1f} ms cpu)")
print(f"  phasegate run --fresh-process:       {fw:7.1f}   {fc:7.1f}")
print(f"  plugin host / --fresh-process:       {pw / fw:6.2f}x   {pc / fc:6.2f}x  (goal <= 1.0x)")
PYEOF
