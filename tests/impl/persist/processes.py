"""Which process served which call: one persistent worker per (mode, device) by default
(per job slot with --jobs),
a fresh one per call with --worker-max-calls 1 or --fresh-process, and the start-up of
each process reported apart from the call (modes[].startup_ms beside duration_ms).

    processes.py PHASEGATE PG_WORKER_C OP_DIR OUT_DIR
pg_worker_c (PG_WORKER_LOG=1) logs its pid with every call; the report keeps each call's
captured output, so the pids are read back from the report."""
import json
import os
import re
import subprocess
import sys

pg, worker, op, out = sys.argv[1:5]
os.makedirs(out, exist_ok=True)
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    print(("ok: " if ok else "FAIL: ") + what)


def calls(name, *extra):
    """[(case, mode, pid, startup_ms)] of one run, in run order."""
    report = os.path.join(out, name + ".json")
    env = dict(os.environ, PG_WORKER_LOG="1")
    r = subprocess.run([pg, "run", "--op-dir", op, "--up-to-module", "1", "--modes", "sim,npu",
                        "--impl", "worker:" + worker, "--report", report, "--no-golden-cache",
                        *extra], env=env, capture_output=True, text=True, timeout=120)
    check(r.returncode in (0, 1), f"{name}: phasegate exited {r.returncode}: {r.stderr[-500:]}")
    got = []
    for c in json.load(open(report))["checks"]:
        for m in c["modes"]:
            pids = re.findall(r"pg_worker_c: call \d+ \(id \d+\): case \S+, mode \S+, pid (\d+)",
                              m.get("stdout", ""))
            check(len(pids) == 1, f"{name}: {c['id']}/{m['mode']} logged one call ({m.get('stdout')!r})")
            check("duration_ms" in m, f"{name}: {c['id']}/{m['mode']} has duration_ms")
            got.append((c["id"], m["mode"], pids[0] if pids else None, m.get("startup_ms")))
    return got


persistent = calls("persistent")
for mode in ("sim", "npu"):
    mine = [g for g in persistent if g[1] == mode]
    check(len({g[2] for g in mine}) == 1, f"persistent: one process serves every {mode} call: {mine}")
    check(mine[0][3] is not None and mine[0][3] > 0, f"persistent: the first {mode} call reports startup_ms")
    check(all(g[3] is None for g in mine[1:]), f"persistent: later {mode} calls report no startup_ms")
check(len({g[2] for g in persistent}) == 2, f"persistent: sim and npu have a process each: {persistent}")
# --jobs 2: case i runs in job process i % 2, which has its own workers (one per mode).
jobs = {(g[0], g[1]): g[2] for g in calls("jobs_2", "--jobs", "2")}
for mode in ("sim", "npu"):
    check(jobs[("L1_canonical", mode)] == jobs[("L2_fp32", mode)] != jobs[("L2_basic", mode)],
          f"jobs_2: one {mode} worker per job slot: {jobs}")
for name, extra in (("max_calls_1", ["--worker-max-calls", "1"]), ("fresh", ["--fresh-process"])):
    got = calls(name, *extra)
    check(len({g[2] for g in got}) == len(got), f"{name}: a new process for every call: {got}")
    check(all(g[3] is not None and g[3] > 0 for g in got), f"{name}: every call reports startup_ms")
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
