"""Nothing outlives the runner (docs/runner.md): `kill -9` of `phasegate run` mid-run
takes every process it started with it — job processes (--jobs), impl children (exec:,
--fresh-process), persistent workers and plugin hosts — and no job goes on running cases.

    outlive.py PHASEGATE OP_DIR OUT_DIR KILLS WAIT_FOR COUNT -- RUN_ARGS...

Each of KILLS rounds starts `phasegate run --op-dir OP_DIR RUN_ARGS…` with a unique
PG_OUTLIVE_TAG in its environment (inherited by everything it starts) and
PG_OUTLIVE_DIR (the impls write their pid there), waits until COUNT tagged processes
whose command line holds WAIT_FOR run (WAIT_FOR "@pids": until COUNT impl processes
recorded their pid, i.e. are busy in a call), kills the runner
with SIGKILL, then polls for up to 3 s until no tagged process is left (the pids the
impls recorded included), and checks that no impl call starts after that.

RUN_ARGS holding `--serve-control @daemon`: a `phasegate serve` daemon is started first
(OUT_DIR/ctl) and the runner leases its worker from it. That process belongs to the
daemon, not to the runner: the daemon must kill it when the runner's connection goes
away (its recorded pid must be gone within 3 s), and must itself stay up; the daemon's
other processes are not the runner's and are not looked for."""
import json
import os
import signal
import subprocess
import sys
import time

pg, op, out, kills, wait_for, count = sys.argv[1:7]
run_args = sys.argv[sys.argv.index("--") + 1:]
kills, count = int(kills), int(count)
os.makedirs(out, exist_ok=True)
failures = []


daemon = None   # the `phasegate serve` daemon's pid (--serve-control @daemon)


def ppid(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def under_daemon(pid):
    while pid > 1:
        if pid == daemon:
            return True
        pid = ppid(pid)
    return False


def tagged(tag):
    """{pid: cmdline} of the live processes whose environment holds PG_OUTLIVE_TAG=tag
    (the daemon's processes, started with the client's environment, left out)."""
    want = ("PG_OUTLIVE_TAG=" + tag).encode()
    found = {}
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{d}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if want in env and state not in (b"Z", b"X") and not (daemon and under_daemon(int(d))):
            found[int(d)] = cmd
    return found


def recorded(pids_dir):
    return sorted(os.listdir(pids_dir)) if os.path.isdir(pids_dir) else []


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


ctl = None
if "@daemon" in run_args:
    ctl = os.path.join(out, "ctl")
    run_args[run_args.index("@daemon")] = ctl
    subprocess.run([pg, "serve", "--control", ctl, "--stop"], capture_output=True, timeout=30)
    r = subprocess.run([pg, "serve", "--control", ctl], capture_output=True, text=True,
                       timeout=30)
    st = subprocess.run([pg, "serve", "--control", ctl, "--status"], capture_output=True,
                        text=True, timeout=30)
    try:
        daemon = json.loads(st.stdout)["pid"]
    except (ValueError, KeyError):
        print(f"FAIL: no daemon: {r.stdout} {r.stderr} {st.stdout} {st.stderr}")
        sys.exit(1)

for k in range(kills):
    tag = f"{os.getpid()}_{k}_{time.monotonic_ns()}"
    pids_dir = os.path.join(out, f"pids{k}")
    os.makedirs(pids_dir, exist_ok=True)
    for name in os.listdir(pids_dir):
        os.unlink(os.path.join(pids_dir, name))
    env = dict(os.environ, PG_OUTLIVE_TAG=tag, PG_OUTLIVE_DIR=pids_dir)
    runner = subprocess.Popen([pg, "run", "--op-dir", op, "--report",
                               os.path.join(out, f"report{k}.json"), "--no-golden-cache",
                               *run_args], env=env, stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(out, f"stderr{k}.txt"), "w"))
    busy = {}
    until = time.monotonic() + 15
    while time.monotonic() < until and runner.poll() is None:
        if wait_for == "@pids":   # calls under way: the pids the impl recorded
            busy = {int(p): "" for p in recorded(pids_dir) if p.isdigit()}
        else:
            busy = {p: c for p, c in tagged(tag).items() if wait_for in c}
        if len(busy) >= count:
            break
        time.sleep(0.05)
    if runner.poll() is not None or len(busy) < count:
        failures.append(f"round {k}: the impl never got busy ({len(busy)} of {count} "
                        f"'{wait_for}' processes; runner exit {runner.poll()}): "
                        f"{open(os.path.join(out, f'stderr{k}.txt')).read()[-400:]}")
        runner.kill()
        runner.wait()
        for p in tagged(tag):
            os.kill(p, signal.SIGKILL)
        continue
    before = tagged(tag)
    runner.kill()   # SIGKILL: nothing of the runner runs any more
    runner.wait()
    left, stray = before, []
    until = time.monotonic() + 3
    while time.monotonic() < until:
        # a dying process shows no environment before its state turns Z: its recorded
        # pid is watched too
        left = tagged(tag)
        stray = [p for p in recorded(pids_dir) if p.isdigit() and alive(int(p))]
        if not left and not stray:
            break
        time.sleep(0.05)
    calls = recorded(pids_dir)
    time.sleep(0.5)
    late = sorted(set(recorded(pids_dir)) - set(calls))
    print(f"round {k}: {len(before)} processes under the runner, {len(left)} left after it "
          f"died, {len(calls)} impl starts recorded, {len(late)} after")
    if left or stray:
        short = {p: c[:70] for p, c in left.items()}
        failures.append(f"round {k}: outlived the runner: {short} (recorded and alive: {stray})")
        for p in list(left) + [int(p) for p in stray]:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
    if late:
        failures.append(f"round {k}: impl calls started after the runner died: {late}")

if ctl:
    if not alive(daemon):
        failures.append(f"the daemon (pid {daemon}) died with a client")
    subprocess.run([pg, "serve", "--control", ctl, "--stop"], capture_output=True, timeout=60)
for f in failures:
    print("FAIL: " + f)
print("ok" if not failures else f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
