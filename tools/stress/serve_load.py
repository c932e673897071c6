#!/usr/bin/python3
"""`phasegate serve` under load (docs/testing.md, "Serve under load and faults").

For each impl (`worker:` load_worker.py, `plugin:` load_plugin.so; op `load` in
tools/stress/op, y = 2 x) one daemon is started as the <op>/workers/start fixture starts
it, and driven two ways:

  api  serve_load_client: N client processes x C calls, each call a full
       connect + lease + call through the real adapter + release + disconnect, as one
       CTest case test makes it, without the process start, contract, golden and
       report. This is what measures the daemon: throughput and latency figures.
  run  N concurrent loops of C `phasegate run --serve-control DIR --case ID`
       processes, exactly as CTest runs case tests (each case its own seed, so its own
       inputs; a report per client). End to end: every run's exit code, every report
       parsed, one check per case with the right status; per-run latency includes the
       phasegate process start, contract, golden and report.

Each is run once clean and once with every K-th call of each client a case named
"crash…" (the impl dies with SIGSEGV): those calls must be classified as crashes
(FAIL, runtime, "SIGSEGV"), every other call must be right. Every answer is checked
against what its own client sent: none lost, duplicated or crossed. After each daemon
is stopped nothing started here may still run (processes counted by the run's unique
directory on their command line).

  serve_load.py [--build DIR] [--clients N] [--calls C] [--run-calls C]
                [--crash-every K] [--modes api,run] [--impls worker,plugin] [--short]
                [--slots S] [--json FILE]
Default: 8 clients x 500 calls (api and run), crash every 50th. --short: 4 x 25 (api),
4 x 6 (run), crash every 5th. Exit 0 when every check held.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import stress_util as su  # noqa: E402


def daemon_leases(args, ctl, env):
    p = subprocess.run([args.phasegate, "serve", "--control", ctl, "--status"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30)
    try:
        return int(json.loads(p.stdout.decode())["leases"])
    except (ValueError, KeyError, TypeError):
        return -1


def run_clients(args, ctl, spec, work, env, tag, crash_every, root):
    """The `run` way: N threads, each C sequential `phasegate run` processes."""
    n, calls = args.clients, args.run_calls
    os.makedirs(root)
    suites, lat, problems = [], [], []
    for k in range(n):
        cases = []
        for i in range(calls):
            crash = crash_every and (i + 1) % crash_every == 0
            cases.append({"id": "%sc%d_%d" % ("crash_" if crash else "", k, i), "level": 2,
                          "seed": 1000 * k + i + 1})
        path = os.path.join(root, "suite_%d.json" % k)
        with open(path, "w") as f:
            json.dump({"op": "load", "total_modules": 1, "cases": cases}, f)
        suites.append((path, cases))
    lock = threading.Lock()

    def client(k):
        suite, cases = suites[k]
        rdir = os.path.join(root, "reports_%d" % k)
        # one client's runs make one report, as the case tests of one ctest invocation do
        session = os.path.join(root, "session_%d" % k)
        with open(session, "w") as f:
            f.write("load-%d\n" % k)
        for c in cases:
            t0 = time.monotonic()
            cmd = [args.phasegate, "run", "--op-dir", su.OP_DIR, "--suite", suite, "--case",
                   c["id"], "--up-to-module", "1", "--impl", spec, "--serve-control", ctl,
                   "--report-dir", rdir, "--report-session", session, "--no-bisect",
                   "--diagnose-budget", "0",
                   "--work-dir", work, "--timeout", "60"]
            p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=120)
            ms = (time.monotonic() - t0) * 1000
            want = 1 if c["id"].startswith("crash") else 0
            with lock:
                lat.append(ms)
                if p.returncode != want:
                    problems.append("client %d case %s: exit %d, want %d: %s" % (
                        k, c["id"], p.returncode, want, p.stdout.decode(errors="replace")[-600:]))

    leases0 = daemon_leases(args, ctl, env)
    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = (time.monotonic() - t0) * 1000
    leased = daemon_leases(args, ctl, env) - leases0
    counts = {"correct": 0, "crashes": 0, "lost": 0, "duplicated": 0, "wrong": 0}
    for k in range(n):
        rep = os.path.join(root, "reports_%d" % k, "load", "M1", "evaluation_report.json")
        seen = {}
        try:
            checks = su.parse_report(rep)["checks"]
        except Exception as e:  # a torn or missing report
            problems.append("client %d: report %s: %s" % (k, rep, e))
            checks = []
        for ch in checks:
            seen[ch["id"]] = seen.get(ch["id"], 0) + 1
            crash = ch["id"].startswith("crash")
            st = ch.get("per_mode_status", {}).get("sim")
            fail = ch.get("failure") or {}
            sig = [m.get("signal") for m in ch.get("modes", [])]
            if crash and st == "FAIL" and fail.get("failure_category") == "runtime" and sig == [11]:
                counts["crashes"] += 1
            elif not crash and st == "PASS" and ch.get("precision_checked") is True:
                counts["correct"] += 1
            else:
                counts["wrong"] += 1
                problems.append("client %d case %s: %s" % (k, ch["id"], json.dumps(ch)[:400]))
        for c in suites[k][1]:
            m = seen.get(c["id"], 0)
            if m == 0:
                counts["lost"] += 1
                problems.append("client %d case %s: no check in the report" % (k, c["id"]))
            elif m > 1:
                counts["duplicated"] += 1
                problems.append("client %d case %s: %d checks" % (k, c["id"], m))
    total = n * calls
    lat.sort()
    expected_crashes = n * (calls // crash_every) if crash_every else 0
    fig = dict(label="run", clients=n, calls_per_client=calls, calls=total,
               crashes_expected=expected_crashes, cross_talk=counts["wrong"],
               wall_ms=round(wall, 1), calls_per_s=round(total / (wall / 1000), 1),
               p50_ms=round(lat[len(lat) // 2], 2) if lat else None,
               p99_ms=round(lat[int(len(lat) * 0.99)], 2) if lat else None,
               max_ms=round(lat[-1], 2) if lat else None, daemon_leases=leased, **counts)
    # every run leased its process from the daemon: none fell back to standalone
    fig["ok"] = (not problems and leased == total and counts["correct"] + counts["crashes"] == total
                 and counts["crashes"] == expected_crashes)
    for p in problems[:20]:
        print("  " + p)
    return fig


def one_impl(args, kind, root, results):
    tag = os.path.join(root, kind)
    os.makedirs(tag)
    ctl, work = os.path.join(tag, "ctl"), os.path.join(tag, "work")
    os.makedirs(work)
    env = su.clean_env(root)
    spec = su.impl_spec(kind, tag, args.plugin)
    serve = [args.phasegate, "serve", "--control", ctl, "--impl", spec, "--idle-timeout", "300",
             "--slots", str(args.slots)]
    ok = True
    p = subprocess.run(serve, env=env, cwd=tag, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60)
    if p.returncode != 0:
        print("FAIL: %s: the daemon did not start: %s" % (kind, p.stdout.decode()))
        return False
    try:
        for mode in args.modes:
            for crash_every in (0, args.crash_every):
                label = "%s %s%s" % (kind, mode, " crash every %d" % crash_every if crash_every else "")
                if mode == "api":
                    cmd = [args.client, "--control", ctl, "--impl", spec, "--clients",
                           str(args.clients), "--calls", str(args.calls), "--crash-every",
                           str(crash_every), "--work", work, "--label", label]
                    c = subprocess.run(cmd, env=env, cwd=tag, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, timeout=3600)
                    err = c.stderr.decode(errors="replace")
                    if err.strip():
                        print("\n".join("  " + ln for ln in err.strip().splitlines()[:20]))
                    try:
                        fig = json.loads(c.stdout.decode())
                    except ValueError:
                        fig = {"label": label, "ok": False, "output": c.stdout.decode()[-500:]}
                    fig["ok"] = fig.get("ok") is True and c.returncode == 0
                else:
                    fig = run_clients(args, ctl, spec, work, env, tag, crash_every,
                                      os.path.join(tag, "run%d" % crash_every))
                    fig["label"] = label
                fig["impl"] = kind
                fig["mode"] = mode
                results.append(fig)
                print(su.figure_line(fig))
                ok = ok and fig["ok"]
    finally:
        subprocess.run([args.phasegate, "serve", "--control", ctl, "--stop"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    left = su.wait_none_left(root, 5)
    if left:
        print("FAIL: %s: processes left running: %s" % (kind, left))
        su.kill_left(root)
        ok = False
    results.append({"label": kind + " processes left", "processes_left": len(left)})
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    su.add_build_args(ap)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--calls", type=int, default=500, help="api calls per client")
    ap.add_argument("--run-calls", type=int, default=500, help="phasegate runs per client")
    ap.add_argument("--crash-every", type=int, default=50)
    ap.add_argument("--modes", default="api,run")
    ap.add_argument("--impls", default="worker,plugin")
    ap.add_argument("--slots", type=int, default=1)
    ap.add_argument("--short", action="store_true", help="the CTest variant: 4 x 25, 4 x 6 runs")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    if args.short:
        args.clients, args.calls, args.run_calls, args.crash_every = 4, 25, 6, 5
    args.modes = [m for m in args.modes.split(",") if m]
    su.resolve_build(args)
    root = tempfile.mkdtemp(prefix="pg_serve_load_")
    results, ok = [], True
    try:
        for kind in args.impls.split(","):
            ok = one_impl(args, kind, root, results) and ok
    finally:
        left = su.kill_left(root)
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print("serve_load: %s" % ("ok" if ok and not left else "FAILED"))
    return 0 if ok and not left else 1


if __name__ == "__main__":
    sys.exit(main())
