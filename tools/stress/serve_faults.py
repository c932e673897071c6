#!/usr/bin/python3
"""`phasegate serve` under faults (docs/testing.md, "Serve under load and faults").

Clients are real `phasegate run --serve-control DIR` processes on op `load`
(tools/stress/op, y = 2 x; impls load_worker.py and load_plugin.so, alternating), as
CTest runs case tests. Scenarios, each repeated with random timings from --seed:

  daemon   kill -9 of the daemon while clients run: every run still right (the call in
           flight completes, later runs fall back to standalone)
  worker   kill -9 of a warm impl process while clients run: the call it was serving
           FAILs as a runtime crash (SIGKILL), every other run is right
  client   kill -9 of a `phasegate run` at a random point (half of them inside a call
           that sleeps): the daemon ends the process that client held
  deleted  the build tree holding the control directory deleted under a running daemon
           while clients run: every run right, the daemon and its processes gone by
           themselves
  unwritable  (in a private user + mount namespace: root ignores permission bits, so
           the directory is bind-mounted read-only there; the mount dies with the
           namespace) the control directory made read-only under a running daemon,
           then a lease that needs a new process, --stop, and a start on the read-only
           directory: every run right, nothing left
  race     several `phasegate serve` starters and two --foreground daemons at once on
           one control directory: one daemon, every starter exits 0, the second
           --foreground one is refused

After each repetition: the next run is right (PASS, leased or standalone), every report
written so far parses and has one check per case (none torn), and once the daemon is
stopped (or gone) nothing started here is still running (processes counted by this
run's unique directory in their command line or environment).

  serve_faults.py [--build DIR] [--long | --short | --kills N] [--seed S]
                  [--scenarios daemon,worker,client,deleted,unwritable,race] [--json FILE]
Default 10 repetitions each; --long 50; --short 5 (3 for deleted, race, unwritable).
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import stress_util as su  # noqa: E402

IMPLS = ("worker", "plugin")


class Fault(Exception):
    pass


class Env:
    """One scenario repetition's world: a control dir under a 'build tree', a suite
    with unique case ids, a report dir, the impl spec."""

    def __init__(self, args, root, name, kind):
        self.args, self.root, self.kind = args, root, kind
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir)
        self.build = os.path.join(self.dir, "build")
        self.ctl = os.path.join(self.build, "phasegate-serve", "load")
        self.work = os.path.join(self.dir, "work")
        os.makedirs(self.work)
        self.reports = os.path.join(self.dir, "reports")
        self.env = su.clean_env(root)
        self.env["PG_STRESS_TAG"] = self.dir
        self.spec = su.impl_spec(kind, self.dir, args.plugin)
        self.n = 0
        self.cases = []  # every case id a run was started for
        self.suite = os.path.join(self.dir, "suite.json")
        cases = [{"id": "c%d" % i, "level": 2, "seed": i + 1} for i in range(200)]
        cases += [{"id": "hang%d" % i, "level": 2, "seed": 500 + i} for i in range(50)]
        cases += [{"id": "slow%d" % i, "level": 2, "seed": 700 + i} for i in range(50)]
        with open(self.suite, "w") as f:
            json.dump({"op": "load", "total_modules": 1, "cases": cases}, f)
        self.lock = threading.Lock()

    def next_case(self, prefix="c"):
        with self.lock:
            self.n += 1
            cid = "%s%d" % (prefix, self.n)
            self.cases.append(cid)
            return cid

    def serve(self, *extra, timeout=60):
        cmd = [self.args.phasegate, "serve", "--control", self.ctl] + list(extra)
        return subprocess.run(cmd, env=self.env, cwd=self.dir, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)

    def start(self):
        p = self.serve("--impl", self.spec, "--idle-timeout", "120")
        if p.returncode != 0:
            raise Fault("serve start: exit %d: %s" % (p.returncode, p.stdout.decode()[-400:]))
        return p.stdout.decode()

    def stop(self):
        self.serve("--stop")

    def daemon_pid(self):
        try:
            with open(os.path.join(self.ctl, "serve.pid")) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return 0

    def run_cmd(self, cid, ctl=None):
        return [self.args.phasegate, "run", "--op-dir", su.OP_DIR, "--suite", self.suite,
                "--case", cid, "--up-to-module", "1", "--impl", self.spec,
                "--serve-control", ctl or self.ctl, "--report-dir", self.reports,
                "--no-bisect", "--diagnose-budget", "0", "--work-dir", self.work,
                "--timeout", "20", "--no-progress"]

    def popen(self, cid):
        return subprocess.Popen(self.run_cmd(cid), env=self.env, cwd=self.dir,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def run(self, cid, ctl=None):
        p = subprocess.run(self.run_cmd(cid, ctl), env=self.env, cwd=self.dir,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        return p.returncode, p.stdout.decode(errors="replace")

    def run_right(self, what, ctl=None):
        cid = self.next_case()
        rc, out = self.run(cid, ctl)
        if rc != 0:
            raise Fault("%s: run %s exit %d, want PASS:\n%s" % (what, cid, rc, out[-800:]))

    def report(self):
        path = os.path.join(self.reports, "load", "M1", "evaluation_report.json")
        if not os.path.exists(path):
            return None
        try:
            return su.parse_report(path)
        except Exception as e:
            raise Fault("torn report %s: %s" % (path, e))

    def check_reports(self):
        """Every report in the tree parses; each case appears at most once."""
        rep = self.report()
        ids = [c["id"] for c in rep["checks"]] if rep else []
        if len(ids) != len(set(ids)):
            raise Fault("a case appears twice in the report")
        for dirpath, _, files in os.walk(self.dir):
            for f in files:
                if f.endswith(".json") and "evaluation_report" in f:
                    try:
                        su.parse_report(os.path.join(dirpath, f))
                    except Exception as e:
                        raise Fault("torn report %s: %s" % (os.path.join(dirpath, f), e))
        return rep

    def none_left(self, what, seconds=6):
        left = su.wait_none_left(self.dir, seconds)
        if left:
            su.kill_left(self.dir)
            raise Fault("%s: left running: %s" % (what, left))


def clients(env, count, runs, accept):
    """count threads, each `runs` sequential phasegate runs, every other one a case that
    takes 0.3 s in the impl (so kills land mid-call); accept(rc, out) -> bool."""
    bad = []

    def one():
        for r in range(runs):
            cid = env.next_case("slow" if r % 2 == 0 else "c")
            rc, out = env.run(cid)
            if not accept(rc, out):
                bad.append("run %s exit %d:\n%s" % (cid, rc, out[-800:]))

    ts = [threading.Thread(target=one) for _ in range(count)]
    for t in ts:
        t.start()
    return ts, bad


def join(ts, bad, what):
    for t in ts:
        t.join()
    if bad:
        raise Fault("%s: %d runs not right; first: %s" % (what, len(bad), bad[0]))


def ok_pass(rc, out):
    return rc == 0


def sc_daemon(env, rng, stats):
    env.start()
    ts, bad = clients(env, 2, 3, ok_pass)
    time.sleep(rng.uniform(0, 0.4))
    pid = env.daemon_pid()
    if leased(env):
        stats["daemon_killed_while_leasing"] = stats.get("daemon_killed_while_leasing", 0) + 1
    if pid:
        os.kill(pid, signal.SIGKILL)
    join(ts, bad, "daemon killed")
    env.none_left("daemon killed (its processes)")
    env.run_right("after the daemon was killed (no daemon: standalone)")
    env.start()  # reclaims the stale pidfile and socket
    env.run_right("after the restart")
    env.stop()


def worker_pids(env):
    """The warm processes the daemon owns (its --status), never a client."""
    p = env.serve("--status")
    try:
        pids = [w["pid"] for w in json.loads(p.stdout.decode())["processes"]]
    except (ValueError, KeyError, TypeError):
        return []
    # a process still starting has no pid yet (0): os.kill(0) would hit this group
    return [pid for pid in pids if isinstance(pid, int) and pid > 1]


def leased(env):
    """1 when the daemon has a process out on lease (a call may be in flight)."""
    p = env.serve("--status")
    try:
        return any(w.get("state") == "leased" for w in json.loads(p.stdout.decode())["processes"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return False


def sc_worker(env, rng, stats):
    env.start()
    killed_calls = []

    def accept(rc, out):
        if rc == 0:
            return True
        if rc == 1 and "SIGKILL" in out:
            killed_calls.append(1)
            return True
        return False

    ts, bad = clients(env, 2, 3, accept)
    time.sleep(rng.uniform(0.1, 0.5))
    pids = worker_pids(env)
    if pids:
        os.kill(rng.choice(pids), signal.SIGKILL)
    join(ts, bad, "worker killed")
    stats["calls_killed_with_their_worker"] = stats.get("calls_killed_with_their_worker", 0) + len(killed_calls)
    env.run_right("after a worker was killed")
    env.stop()


def sc_client(env, rng, stats):
    env.start()
    env.run_right("warm-up")
    hang = rng.random() < 0.5
    cid = env.next_case("hang" if hang else "c")
    p = env.popen(cid)
    time.sleep(rng.uniform(0.05, 0.5) if hang else rng.uniform(0, 0.15))
    in_call = hang and leased(env)  # the hang case holds the only process: mid-call
    held = worker_pids(env) if in_call else []
    p.kill()
    p.communicate()
    if in_call:
        stats["clients_killed_in_a_call"] = stats.get("clients_killed_in_a_call", 0) + 1
        until = time.monotonic() + 5
        while any(os.path.exists("/proc/%d" % q) and not zombie(q) for q in held):
            if time.monotonic() > until:
                raise Fault("the process a killed client held is still running: %s" % held)
            time.sleep(0.02)
    # the process that client held is ended by the daemon; the next lease gets a live one
    env.run_right("after a client was killed")
    env.stop()


def zombie(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return True


def sc_deleted(env, rng, stats):
    env.start()
    pid = env.daemon_pid()
    ts, bad = clients(env, 2, 3, ok_pass)
    time.sleep(rng.uniform(0, 0.4))
    shutil.rmtree(env.build)
    join(ts, bad, "build tree deleted")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not zombie(pid):
        time.sleep(0.05)
    env.none_left("build tree deleted: the daemon and its processes")
    env.run_right("after the build tree was deleted (standalone)")
    env.start()
    env.run_right("a new daemon in a new build tree")
    env.stop()


def sc_race(env, rng, stats):
    starters = 2 + rng.randrange(5)
    cmd = [env.args.phasegate, "serve", "--control", env.ctl, "--impl", env.spec,
           "--idle-timeout", "120"]
    ps = [subprocess.Popen(cmd, env=env.env, cwd=env.dir, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT) for _ in range(starters)]
    outs = [(p.wait(60), p.stdout.read().decode()) for p in ps]
    for rc, out in outs:
        if rc != 0:
            raise Fault("racing starter exit %d: %s" % (rc, out))
    pids = {out.split("pid ")[-1].strip(" )\n") for _, out in outs}
    if len(pids) != 1:
        raise Fault("racing starters saw several daemons: %s" % outs)
    fg = [env.args.phasegate, "serve", "--control", env.ctl, "--foreground", "--idle-timeout", "5"]
    p = subprocess.run(fg, env=env.env, cwd=env.dir, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    if p.returncode == 0 or b"another phasegate serve" not in p.stdout:
        raise Fault("a second --foreground daemon was not refused: %d %s" % (p.returncode, p.stdout))
    daemons = [c for _, c in su.ours(env.dir) if " serve --foreground" in c]
    if len(daemons) != 1:
        raise Fault("%d daemons run: %s" % (len(daemons), daemons))
    env.run_right("after racing starters")
    env.stop()
    stats["racing_starters"] = stats.get("racing_starters", 0) + starters


def sc_unwritable(env, rng, stats):
    """The daemon's log directory replaced by a file (anywhere, as any user), then this
    script's --inner-unwritable in a user + mount namespace (a read-only bind mount)."""
    env.start()
    env.run_right("before")
    wdir = os.path.join(env.ctl, "workers")
    shutil.rmtree(wdir)
    open(wdir, "w").close()
    for pid in worker_pids(env):  # the next lease needs a process: its log cannot be made
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    env.run_right("the daemon cannot create a worker log")
    lock = os.path.join(env.ctl, "serve.lock")  # a lock file that cannot be opened
    os.unlink(lock)
    os.mkdir(lock)
    env.stop()
    env.none_left("stop with the log directory and the lock file unusable")
    if subprocess.run(["unshare", "-rm", "true"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        stats["read_only_mount"] = "skipped: no user namespaces here"
        return
    cmd = ["unshare", "-rm", "--propagation", "private", su.PYTHON, os.path.abspath(__file__),
           "--inner-unwritable", env.dir, "--kind", env.kind, "--phasegate", env.args.phasegate,
           "--client", env.args.client, "--plugin", env.args.plugin, "--root", env.root]
    p = subprocess.run(cmd, env=env.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=300)
    if p.returncode != 0:
        raise Fault("unwritable: %s" % p.stdout.decode(errors="replace")[-2000:])
    stats["read_only_mount"] = stats.get("read_only_mount", 0) + 1


def inner_unwritable(args):
    """Inside the namespace: the control directory read-only under a running daemon."""
    env = Env(args, args.root, os.path.basename(args.inner_unwritable) + "_in", args.kind)

    def ro(path):
        subprocess.run(["mount", "--bind", path, path], check=True)
        subprocess.run(["mount", "-o", "remount,ro,bind", path], check=True)

    env.start()
    env.run_right("before")
    ro(env.ctl)
    env.run_right("read-only control dir, warm process")
    for pid in worker_pids(env):  # the next lease must start a process: its log cannot be made
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    env.run_right("read-only control dir, a new process needed")
    env.stop()
    env.none_left("stop on a read-only control dir")
    p = env.serve("--impl", env.spec)
    if p.returncode != 1:
        raise Fault("start on a read-only dir: exit %d, want 1: %s" % (p.returncode, p.stdout))
    env.run_right("read-only control dir, no daemon")
    env.none_left("start refused on a read-only control dir")
    env.check_reports()
    print("ok")
    return 0


SCENARIOS = {"daemon": sc_daemon, "worker": sc_worker, "client": sc_client,
             "deleted": sc_deleted, "unwritable": sc_unwritable, "race": sc_race}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    su.add_build_args(ap)
    ap.add_argument("--long", action="store_true", help="50 repetitions of each")
    ap.add_argument("--short", action="store_true", help="the CTest variant")
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--json")
    ap.add_argument("--inner-unwritable", help=argparse.SUPPRESS)
    ap.add_argument("--kind", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    su.resolve_build(args)
    if args.inner_unwritable:
        try:
            return inner_unwritable(args)
        except Fault as e:
            print("FAIL: %s" % e)
            return 1
    reps = 50 if args.long else 5 if args.short else args.kills
    rng = random.Random(args.seed)
    root = tempfile.mkdtemp(prefix="pg_serve_faults_")
    results, failed = {}, 0
    try:
        for name in args.scenarios.split(","):
            n = reps if (not args.short or name in ("daemon", "worker", "client")) else 3
            stats = {"repetitions": 0, "failures": 0}
            t0 = time.monotonic()
            for i in range(n):
                kind = IMPLS[i % 2]
                env = Env(args, root, "%s%d" % (name, i), kind)
                try:
                    SCENARIOS[name](env, rng, stats)
                    env.none_left("%s: after the daemon stopped" % name)
                    rep = env.check_reports()
                    stats["reports_parsed"] = stats.get("reports_parsed", 0) + (1 if rep else 0)
                except Fault as e:
                    stats["failures"] += 1
                    print("FAIL %s #%d (%s): %s" % (name, i, kind, e))
                    env.stop()
                    su.kill_left(env.dir)
                stats["repetitions"] += 1
                shutil.rmtree(env.dir, ignore_errors=True)
            stats["seconds"] = round(time.monotonic() - t0, 1)
            results[name] = stats
            failed += stats["failures"]
            print("%s %-10s %s" % ("ok  " if not stats["failures"] else "FAIL", name,
                                   json.dumps(stats)))
    finally:
        left = su.kill_left(root)
        shutil.rmtree(root, ignore_errors=True)
    if left:
        print("FAIL: left running at the end: %s" % left)
    results["processes_left"] = len(left)
    results["seed"] = args.seed
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print("serve_faults: %s" % ("ok" if not failed and not left else "FAILED"))
    return 0 if not failed and not left else 1


if __name__ == "__main__":
    sys.exit(main())
