"""Helpers shared by serve_load.py and serve_faults.py: where the build's programs are,
the impl specs of op `load`, the environment every process started here gets, and
counting the processes this run started.

Every process started here carries the run's unique scratch directory: in its command
line (the daemon's --control, the worker's --tag, the plugin's copied .so) or in its
environment (PG_STRESS_TAG, which the daemon passes on to the workers it starts with
the client's environment). Only such processes are counted, and only they are killed
if something was left: never another helper's or test's process.
"""
import json
import os
import shutil
import signal
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OP_DIR = os.path.join(HERE, "op")
PYTHON = "/usr/bin/python3"


def add_build_args(ap):
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "ci"),
                    help="the build tree (default build/ci)")
    ap.add_argument("--phasegate", help="default BUILD/runner/phasegate")
    ap.add_argument("--client", help="default BUILD/tests/serve/serve_load_client")
    ap.add_argument("--plugin", help="default BUILD/tests/serve/libpg_load_plugin.so")


def resolve_build(args):
    b = args.build
    args.phasegate = args.phasegate or os.path.join(b, "runner", "phasegate")
    args.client = args.client or os.path.join(b, "tests", "serve", "serve_load_client")
    args.plugin = args.plugin or os.path.join(b, "tests", "serve", "libpg_load_plugin.so")
    for p in (args.phasegate, args.client, args.plugin):
        if not os.path.exists(p):
            raise SystemExit("missing %s: build the tree first (cmake --build --preset ci)" % p)


def clean_env(root):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("PHASEGATE_") or k.startswith("CTEST_RESOURCE_GROUP"):
            del env[k]
    env["PG_STRESS_TAG"] = root
    env["PHASEGATE_CACHE_DIR"] = os.path.join(root, "cache")
    env["TMPDIR"] = os.path.join(root, "tmp")
    os.makedirs(env["TMPDIR"], exist_ok=True)
    return env


def impl_spec(kind, tag, plugin):
    """worker: load_worker.py tagged with this run's directory; plugin: a copy of the
    plugin inside it (the plugin host's command line names the .so)."""
    if kind == "worker":
        return "worker:%s %s --tag %s" % (PYTHON, os.path.join(HERE, "load_worker.py"), tag)
    so = os.path.join(tag, "load_plugin.so")
    if not os.path.exists(so):
        shutil.copy(plugin, so)
    return "plugin:" + so


def parse_report(path):
    """The report, parsed strictly: a torn or half-written file raises."""
    with open(path, "rb") as f:
        data = f.read()
    rep = json.loads(data.decode("utf-8"))
    for key in ("op_name", "status", "checks", "cases_total", "cases_passed"):
        if key not in rep:
            raise ValueError("no key %r" % key)
    if rep["cases_total"] != len(rep["checks"]):
        raise ValueError("cases_total %d but %d checks" % (rep["cases_total"], len(rep["checks"])))
    return rep


def ours(root):
    """[(pid, command line)] of the live processes that carry `root`."""
    found = []
    me = os.getpid()
    key = root.encode()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open("/proc/%s/stat" % d, "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read()
            try:
                with open("/proc/%s/environ" % d, "rb") as f:
                    envb = f.read()
            except OSError:
                envb = b""
        except (OSError, IndexError):
            continue
        if key in cmd or (b"PG_STRESS_TAG=" + key + b"\0") in envb:
            found.append((int(d), cmd.replace(b"\0", b" ").decode(errors="replace").strip()))
    return found


def wait_none_left(root, seconds):
    until = time.monotonic() + seconds
    left = ours(root)
    while left and time.monotonic() < until:
        time.sleep(0.05)
        left = ours(root)
    return left


def kill_left(root):
    left = ours(root)
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return left


def figure_line(fig):
    keys = ("calls", "correct", "crashes", "lost", "duplicated", "cross_talk", "wrong", "failed",
            "calls_per_s", "p50_ms", "p99_ms")
    parts = ["%s=%s" % (k, fig[k]) for k in keys if k in fig]
    return "%s %-34s %s" % ("ok  " if fig.get("ok") else "FAIL", fig.get("label", ""),
                            " ".join(parts))
