#!/usr/bin/env python3
"""hostile_worker.py ATTACK — a worker-protocol impl that attacks the runner.

A correct attention impl (suites/attention/impl/attention_exec.py computes the outputs)
speaking worker protocol v1 by hand, so that it can break the protocol at the byte
level. Every call behaves except call number HOSTILE_CALL (default 2) of each process,
where ATTACK happens. tests/impl/hostile/CMakeLists.txt runs each ATTACK through
`phasegate run` and says what phasegate must make of it; docs/testing.md "Hostile
impls" lists them. Environment:

  HOSTILE_CALL     which call of the process attacks (default 2; 0: none)
  HOSTILE_ONCE     a marker file: only the first process to reach HOSTILE_CALL attacks
  HOSTILE_OUTSIDE  a directory outside every case directory (the test's): keep/ holds
                   files that must stay untouched and never be read
  HOSTILE_LOCK     the "device" lock file (flock) for the held-resource attacks
  HOSTILE_FORKS    how many children fork_bomb starts (default 200)
"""
import fcntl
import os
import shutil
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "suites", "attention", "impl"))
import attention_exec  # noqa: E402
import pg_exec_helper  # noqa: E402  (attention_exec puts tools/ on the path)

ATTACK = sys.argv[1] if len(sys.argv) > 1 else "none"
AT = int(os.environ.get("HOSTILE_CALL", "2"))
OUTSIDE = os.environ.get("HOSTILE_OUTSIDE", "")
R, W = (int(x) for x in os.environ["PHASEGATE_WORKER_FDS"].split(","))


def send(obj):
    import json
    os.write(W, (json.dumps(obj) + "\n").encode())


def read_line(buf=[b""]):  # noqa: B006 — the buffer lives across calls
    while b"\n" not in buf[0]:
        chunk = os.read(R, 1 << 16)
        if not chunk:
            os._exit(0)  # EOF: exit now
        buf[0] += chunk
    line, buf[0] = buf[0].split(b"\n", 1)
    return line


def wait_gone(path, limit_s=5.0):
    """Until the runner removed `path` (it read the outputs and is done with the call)."""
    end = time.time() + limit_s
    while os.path.exists(path) and time.time() < end:
        time.sleep(0.01)


def sleepers(n, escape=False):
    """n children that sleep (bounded: 60 s); escape: each leaves the process group."""
    for _ in range(n):
        if os.fork() == 0:
            if escape:
                os.setsid()
            time.sleep(60)
            os._exit(0)


def take_lock(child_too=False):
    """The 'device': an exclusive flock held for the life of the process (and of a
    helper child with child_too). Busy means a previous process still holds it."""
    fd = os.open(os.environ["HOSTILE_LOCK"], os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return "device busy: the lock is held by another process (a replaced worker left it)"
    if child_too and os.fork() == 0:
        time.sleep(60)  # the helper inherits the open lock: it holds it too
        os._exit(0)
    return None


def first_attack():
    """True the first time in the run (HOSTILE_ONCE), so a replacement does not attack."""
    once = os.environ.get("HOSTILE_ONCE")
    if not once:
        return True
    try:
        os.close(os.open(once, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return True
    except FileExistsError:
        return False


def attack(n, req, raw):
    """Runs ATTACK on call n. Returns the answer to send (None: send nothing)."""
    ok = {"id": raw["id"], "status": "ok"}
    out_dir = raw["out_dir"]
    case_dir = os.path.dirname(out_dir)
    if ATTACK == "close_fds":            # both protocol fds closed, the process lives on
        os.close(R)
        os.close(W)
        time.sleep(30)
    elif ATTACK == "stdout_on_answer":   # stdout pointed at the answer fd, then a print
        os.dup2(W, 1)
        print("hello from the impl: this is not JSON", flush=True)
        attention_exec.compute(req)
        return ok
    elif ATTACK == "answer_to_stderr":   # the answer fd replaced by stderr: nothing arrives
        os.dup2(2, W)
        attention_exec.compute(req)
        return ok
    elif ATTACK == "sigstop":
        os.kill(os.getpid(), signal.SIGSTOP)
        attention_exec.compute(req)
        return ok
    elif ATTACK == "ok_then_write":      # answers first, writes once the runner is done
        attention_exec.compute(req)      # (computed first: the inputs go with the directory)
        late = tempfile.mkdtemp(prefix="hostile-late-")
        for name in os.listdir(out_dir):
            shutil.move(os.path.join(out_dir, name), late)
        send(ok)
        wait_gone(case_dir)                  # removed last: the runner is done with it
        try:
            os.makedirs(out_dir, exist_ok=True)  # the old, removed directory, made again
            for name in os.listdir(late):
                shutil.move(os.path.join(late, name), out_dir)
            os.rmdir(late)
        except OSError as e:                 # a late writer may lose: it must not die
            print("late write failed: %s" % e, file=sys.stderr)
        return None
    elif ATTACK == "ok_partial":         # half an output file, answered ok
        attention_exec.compute(req)
        path = req.output_path("scores")
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
        return ok
    elif ATTACK == "symlink_out":        # out/ replaced by a link to a directory outside
        shutil.rmtree(out_dir)
        os.symlink(os.path.join(OUTSIDE, "keep"), out_dir)
        return ok
    elif ATTACK == "symlink_case_dir":   # the whole case directory swapped for a link
        os.rename(case_dir, case_dir + ".moved")
        os.symlink(os.path.join(OUTSIDE, "case"), case_dir)
        return ok
    elif ATTACK == "symlink_output":     # correct values, but in a file outside, linked
        mine = os.path.join(OUTSIDE, "impl")
        os.makedirs(mine, exist_ok=True)
        req.raw["outputs"][0]["path"] = os.path.join(mine, "scores.npy")
        attention_exec.compute(pg_exec_helper.Request(raw=req.raw))
        os.symlink(os.path.join(mine, "scores.npy"), os.path.join(out_dir, "scores.npy"))
        return ok
    elif ATTACK == "symlink_canary":     # an output that is a link to a secret file
        os.symlink(os.path.join(OUTSIDE, "keep", "canary.txt"),
                   os.path.join(out_dir, "scores.npy"))
        return ok
    elif ATTACK == "hardlink_canary":    # a hard link to the secret file
        os.link(os.path.join(OUTSIDE, "keep", "canary.txt"), os.path.join(out_dir, "scores.npy"))
        return ok
    elif ATTACK == "fifo_output":        # a FIFO: an open() for reading would block
        os.mkfifo(os.path.join(out_dir, "scores.npy"))
        return ok
    elif ATTACK == "remove_out":
        shutil.rmtree(out_dir)
        return ok
    elif ATTACK in ("fork_bomb", "fork_bomb_hang", "setsid_escape"):
        sleepers(int(os.environ.get("HOSTILE_FORKS", "200")), escape=ATTACK == "setsid_escape")
        if ATTACK == "fork_bomb_hang":
            time.sleep(60)
        attention_exec.compute(req)
        return ok
    elif ATTACK == "lock_crash":         # dies holding the device lock
        os.kill(os.getpid(), signal.SIGSEGV)
    attention_exec.compute(req)
    return ok


def main():
    os.set_inheritable(R, False)
    os.set_inheritable(W, False)
    if ATTACK != "stdout_on_answer":
        os.dup2(2, 1)
    busy = None
    if ATTACK in ("lock", "lock_child", "lock_crash"):
        busy = take_lock(child_too=ATTACK == "lock_child")
    send({"phasegate_worker": 1})
    n = 0
    attacking = False
    while True:
        import json
        raw = json.loads(read_line())
        n += 1
        req = pg_exec_helper.Request(raw=raw)
        if busy:
            send({"id": raw["id"], "status": "error", "message": busy})
            continue
        mode = os.stat(os.path.dirname(raw["out_dir"])).st_mode & 0o777
        if mode != 0o700:  # case directories are private to the user
            send({"id": raw["id"], "status": "error", "message": "case directory mode %o" % mode})
            continue
        if n == AT:
            attacking = first_attack()
        if n == AT and attacking:
            answer = attack(n, req, raw)
        elif n == AT + 1 and attacking and ATTACK == "ok_then_write":
            answer = {"id": raw["id"], "status": "ok"}  # writes nothing: out/ must be fresh
        else:
            attention_exec.compute(req)
            answer = {"id": raw["id"], "status": "ok"}
        sys.stdout.flush()
        sys.stderr.flush()
        if answer is not None:
            send(answer)


if __name__ == "__main__":
    main()
