"""The live progress line of `phasegate run` (docs/runner.md "The progress line"): on a terminal
it appears once a run takes a second, is redrawn in place and is gone at the end, the
lines around it exactly what a pipe gets; never on a pipe, under CTest, with TERM=dumb
or with --no-progress.

    progress.py PHASEGATE OP_DIR WORK_DIR

The impl is a slow python: impl (0.6 s a call, its second call negated, its third
2.6 s) on the toy op's phase 1, three cases: about four seconds. The third case is long
enough for the line's clock to be redrawn while it runs (a ticker, once a second), so a
long case does not look hung.
"""
import os
import pty
import re
import select
import subprocess
import sys

pg, op_dir, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
impl = os.path.join(work, "slow.py")
with open(impl, "w") as f:
    f.write("import time\n"
            "calls = 0\n"
            "def double(x):\n"
            "    global calls\n"
            "    calls += 1\n"
            "    time.sleep(2.6 if calls == 3 else 0.6)\n"
            "    return -2 * x if calls == 2 else 2 * x\n")
cmd = [pg, "run", "--op-dir", op_dir, "--impl", "python:%s::double" % impl,
       "--python", sys.executable, "--up-to-module", "1", "--modes", "sim",
       "--report-dir", os.path.join(work, "reports"), "--no-bisect", "--diagnose-budget", "0"]

# The test runs under CTest: its own markers must not reach the runs that play a user.
base_env = {k: v for k, v in os.environ.items()
            if k not in ("CTEST_INTERACTIVE_DEBUG_MODE", "DASHBOARD_TEST_FROM_CTEST")}
base_env["TERM"] = "xterm"
fails = []


def check(cond, what, out):
    if not cond:
        fails.append("%s\n--- output ---\n%r" % (what, out))


def start_tty(args, env):
    """Starts args with stdin, stdout and stderr on a new pseudo-terminal."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, env=env, stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    return proc, master


def collect(runs):
    """Reads every run's terminal until it closes: [(exit code, text)] in order."""
    outs = [b""] * len(runs)
    open_fds = {fd: i for i, (_, fd) in enumerate(runs)}
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [], 120)
        if not ready:
            break
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                chunk = b""
            if chunk:
                outs[open_fds[fd]] += chunk
            else:
                os.close(fd)
                del open_fds[fd]
    return [(proc.wait(timeout=120), out.decode("utf-8", "replace"))
            for (proc, _), out in zip(runs, outs)]


def screen(out):
    """What a terminal shows at the end: \\r goes to column 0, ESC[K erases to the end."""
    lines, cur, col = [], [], 0
    i = 0
    while i < len(out):
        c = out[i]
        if out.startswith("\x1b[K", i):
            del cur[col:]
            i += 3
            continue
        if c == "\r":
            col = 0
        elif c == "\n":
            lines.append("".join(cur))
            cur, col = [], 0
        else:
            if col < len(cur):
                cur[col] = c
            else:
                cur.append(c)
            col += 1
        i += 1
    if cur:
        lines.append("".join(cur))
    return lines


def normal(lines):
    return [re.sub(r"[0-9.]+ ms$", "N ms", l) for l in lines if l.strip()]


# Every run at once (each takes about four seconds, more on a busy machine: only the
# lower bound matters). A pipe gives the reference lines.
negative = [
    ("CTEST_INTERACTIVE_DEBUG_MODE", cmd, dict(base_env, CTEST_INTERACTIVE_DEBUG_MODE="1")),
    ("DASHBOARD_TEST_FROM_CTEST", cmd, dict(base_env, DASHBOARD_TEST_FROM_CTEST="3.25.1")),
    ("TERM=dumb", cmd, dict(base_env, TERM="dumb")),
    ("--no-progress", cmd + ["--no-progress"], base_env)]
runs = [start_tty(cmd, base_env)] + [start_tty(args, env) for _, args, env in negative]
piped = subprocess.run(cmd, env=base_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
results = collect(runs)

# The pipe: no progress line, no escape sequence.
check(piped.returncode == 1, "piped run: exit %d, want 1 (one case fails)" % piped.returncode,
      piped.stdout)
check("[phasegate] progress" not in piped.stdout and "\x1b" not in piped.stdout and "\r" not in piped.stdout,
      "a progress line on a pipe", piped.stdout)
want = normal(piped.stdout.splitlines())

# A terminal: the line appears (after a second: the run takes about four), counts the
# failure, is redrawn in place (also between cases), and the screen ends with exactly
# the piped lines.
rc, out = results[0]
check(rc == 1, "terminal run: exit %d, want 1" % rc, out)
draws = re.findall(r"\r(\[phasegate\] progress: [^\r\n\x1b]*)\x1b\[K", out)
check(draws, "no progress line on a terminal", out)
check(all(re.fullmatch(r"\[phasegate\] progress: [1-3]/3 case-modes, [01] failed, "
                       r"\d+:\d\d elapsed(, ETA \d+:\d\d)?", d) for d in draws),
      "progress line format: %r" % draws, out)
check(any(", 1 failed" in d for d in draws), "the failure is not counted: %r" % draws, out)
clocks = {re.search(r"(\d+:\d\d) elapsed", d).group(1) for d in draws if " 2/3 " in d}
check(len(clocks) >= 2, "the clock was not redrawn during the long third case: %r" % draws, out)
shown = screen(out)
check(not any("[phasegate] progress" in l for l in shown), "the progress line is left on the screen", shown)
check(normal(shown) == want, "terminal lines differ from the piped ones:\n%s\nvs\n%s"
      % ("\n".join(normal(shown)), "\n".join(want)), out)

# Never under CTest (either marker), with TERM=dumb, or with --no-progress.
for (name, _, _), (rc, out) in zip(negative, results[1:]):
    check(rc == 1 and "[phasegate] progress" not in out and "\x1b[K" not in out,
          "%s: exit %d, or a progress line" % (name, rc), out)
    check(normal(screen(out)) == want, "%s: lines differ from the piped ones" % name, out)

for f in fails:
    print("FAIL:", f)
print("ok" if not fails else "%d failure(s)" % len(fails))
sys.exit(1 if fails else 0)
