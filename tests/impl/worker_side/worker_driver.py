#!/usr/bin/env python3
"""tests/impl/worker_side: plays the runner's side of worker protocol v1 (docs/design.md §6,
docs/worker_protocol.md) against real workers, one scenario per CTest test.

    worker_driver.py SCENARIO --root SRC --tmp DIR [--c-worker PATH] [--phasegate PATH]

A worker is started exactly as the runner starts it: `/bin/sh -c COMMAND` in a new
session with PHASEGATE_WORKER=1, PHASEGATE_MODE, PHASEGATE_DEVICE_ID and
PHASEGATE_WORKER_FDS=R,W (two pipes passed with pass_fds); stdout and stderr go to
files so a test can prove that nothing the worker prints reaches the protocol. Every
line read from W must be one JSON object; requests are the exec adapter's
request.json objects (runner/impl/exec.c) plus "id", with in/*.npy written here.

Exit status: 0 pass, 1 fail, 77 skipped (torch missing, for the torch scenarios).
PG_EXPECT_CUDA=1 (on a GPU host) makes mode cuda of the torch scenarios required.
"""
import argparse
import importlib.util
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

SKIP = 77
PY = sys.executable


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


# ---- one worker process, seen from the runner ----

class Worker:
    def __init__(self, tmp, name, cmd, mode="sim", device_id=0, env=None):
        self.name, self.cmd = name, cmd
        self.out_path = os.path.join(tmp, f"{name}.stdout")
        self.err_path = os.path.join(tmp, f"{name}.stderr")
        req_r, self.req_w = os.pipe()   # runner -> worker
        self.ans_r, ans_w = os.pipe()   # worker -> runner
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env.update(PHASEGATE_WORKER="1", PHASEGATE_MODE=mode,
                        PHASEGATE_DEVICE_ID=str(device_id),
                        PHASEGATE_WORKER_FDS=f"{req_r},{ans_w}")
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(["/bin/sh", "-c", cmd], env=full_env,
                                         pass_fds=(req_r, ans_w), stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err, start_new_session=True)
        os.close(req_r)
        os.close(ans_w)
        self.buf = b""
        self.t_start = time.monotonic()

    def read_line(self, timeout):
        """The next line from W (bytes, without newline); None at EOF."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Fail(f"{self.name}: no answer within {timeout} s; stderr:\n{self.stderr()}")
            ready, _, _ = select.select([self.ans_r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.ans_r, 65536)
            if not chunk:
                if self.buf:
                    raise Fail(f"{self.name}: a partial line before EOF: {self.buf!r}")
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def read_json(self, timeout):
        line = self.read_line(timeout)
        if line is None:
            raise Fail(f"{self.name}: EOF on the answer pipe (exit {self.proc.poll()}); "
                       f"stderr:\n{self.stderr()}")
        try:
            obj = json.loads(line)
        except ValueError:
            raise Fail(f"{self.name}: a protocol line that is not JSON: {line!r}")
        check(isinstance(obj, dict), f"{self.name}: a protocol line that is not an object: {line!r}")
        return obj

    def handshake(self, timeout=20):
        obj = self.read_json(timeout)
        check(obj == {"phasegate_worker": 1}, f"{self.name}: bad handshake {obj}")
        self.ready_s = time.monotonic() - self.t_start
        return self.ready_s

    def send_raw(self, data):
        os.write(self.req_w, data)

    def call(self, req, rid, timeout=20):
        req = dict(req, id=rid)
        self.send_raw((json.dumps(req) + "\n").encode())
        ans = self.read_json(timeout)
        check(ans.get("id") == rid, f"{self.name}: answer id {ans.get('id')!r}, sent {rid}: {ans}")
        check(ans.get("status") in ("ok", "unavailable", "error"), f"{self.name}: bad status {ans}")
        if ans["status"] != "ok":
            check(isinstance(ans.get("message"), str) and ans["message"],
                  f"{self.name}: a non-ok answer without a message: {ans}")
        return ans

    def close_and_wait(self, limit=1.0):
        """Closes R (EOF for the worker); returns (exit code, seconds to exit)."""
        t0 = time.monotonic()
        os.close(self.req_w)
        self.req_w = -1
        try:
            rc = self.proc.wait(timeout=limit + 5)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Fail(f"{self.name}: still running {limit + 5} s after EOF on its request fd")
        took = time.monotonic() - t0
        return rc, took

    def expect_exit_after_eof(self, limit=1.0):
        rc, took = self.close_and_wait(limit)
        check(rc == 0, f"{self.name}: exit status {rc} after EOF (expected 0); stderr:\n{self.stderr()}")
        check(took <= limit, f"{self.name}: took {took:.2f} s to exit after EOF (limit {limit} s)")
        check(self.read_line(1) is None, f"{self.name}: wrote after EOF")
        print(f"{self.name}: EOF -> exit 0 in {took * 1e3:.0f} ms")

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def stdout(self):
        with open(self.out_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stderr(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode(errors="replace")

    def cleanup(self):
        if self.req_w >= 0:
            os.close(self.req_w)
            self.req_w = -1
        if self.proc.poll() is None:
            self.kill()
        os.close(self.ans_r)


# ---- requests, as runner/impl/exec.c writes request.json ----

_counter = [0]


def make_request(tmp, inputs, outputs, op="attention", up_to=1, total=3, mode="sim",
                 case="t", dims=None, knobs=None, device_id=0):
    """A fresh case directory with in/<name>.npy and an empty out/, and its request.
    inputs: {name: array}; outputs: [(name, dtype, shape)]."""
    _counter[0] += 1
    d = os.path.join(tmp, f"case{_counter[0]:03d}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "in"))
    os.makedirs(os.path.join(d, "out"))
    ins = []
    for name, a in inputs.items():
        p = os.path.join(d, "in", name + ".npy")
        np.save(p, a)
        ins.append({"name": name, "dtype": str(a.dtype), "shape": list(a.shape), "path": p})
    outs = [{"name": n, "dtype": dt, "shape": list(shape),
             "path": os.path.join(d, "out", n + ".npy")} for n, dt, shape in outputs]
    return {"schema_version": 1, "op": op, "suffix": "".join(str(i) for i in range(1, up_to + 1)),
            "up_to_module": up_to, "total_modules": total, "mode": mode, "device_id": device_id,
            "case": case, "dims": dims or {}, "knobs": knobs or {},
            "in_dir": os.path.join(d, "in"), "out_dir": os.path.join(d, "out"),
            "inputs": ins, "outputs": outs}


def load_out(req, name):
    for o in req["outputs"]:
        if o["name"] == name:
            check(os.path.exists(o["path"]), f"output {name} was not written")
            return np.load(o["path"])
    raise KeyError(name)


def attention_inputs(B=1, H=2, S=8, D=16, seed=0, dtype=np.float16):
    rng = np.random.default_rng(seed)
    return {"q": rng.standard_normal((B, H, S, D)).astype(dtype),
            "k": rng.standard_normal((B, H, S, D)).astype(dtype),
            "v": rng.uniform(-1, 1, (B, H, S, D)).astype(dtype)}


def attention_ref(x, up_to):
    q, k, v = (x[n].astype(np.float32) for n in "qkv")
    s = q @ np.swapaxes(k, -1, -2) * np.float32(1 / np.sqrt(q.shape[-1]))
    if up_to == 1:
        return s
    e = np.exp(s - s.max(-1, keepdims=True))
    p = (e / e.sum(-1, keepdims=True)).astype(np.float16)
    if up_to == 2:
        return p
    return (p.astype(np.float32) @ v).astype(np.float16)


def attention_outputs(x, up_to):
    B, H, S, D = x["q"].shape
    return {1: [("scores", "float32", (B, H, S, S))], 2: [("probs", "float16", (B, H, S, S))],
            3: [("out", "float16", (B, H, S, D))]}[up_to]


def attention_request(tmp, x, up_to, mode="sim", case="t"):
    B, H, S, D = x["q"].shape
    return make_request(tmp, x, attention_outputs(x, up_to), up_to=up_to, mode=mode, case=case,
                        dims={"B": B, "H": H, "S": S, "D": D})


def close(a, b, atol, rtol, what):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    check(a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}")
    err = np.abs(a - b)
    ok = err <= atol + rtol * np.abs(b)
    check(bool(ok.all()), f"{what}: max abs diff {err.max():.3g} (atol {atol}, rtol {rtol})")


# ---- scenarios ----

def attention_exec_cmd(a):
    return f"{PY} {a.root}/suites/attention/impl/attention_exec.py"


def fake_cmd(a):
    return f"{PY} {a.root}/tests/impl/worker_side/fake_impl.py"


def fake_request(tmp, behave, value=1.0, mode="sim"):
    return make_request(tmp, {"x": np.arange(6, dtype=np.float32).reshape(2, 3)},
                        [("y", "float32", (2, 3)), ("z", "float16", (4,))], op="fake",
                        total=1, mode=mode, knobs={"behave": behave, "value": value})


def sc_attention_exec(a):
    """attention_exec.py as a worker: phases 1..3 on one process, ids echoed, npu
    unavailable, a bad request answered "error" without ending the worker, EOF."""
    w = Worker(a.tmp, "attention_exec", attention_exec_cmd(a))
    try:
        print(f"handshake after {w.handshake() * 1e3:.0f} ms")
        x = attention_inputs(S=8, D=16)
        for k, rid in ((1, 100), (2, 5), (3, 2**40)):
            req = attention_request(a.tmp, x, k)
            ans = w.call(req, rid)
            check(ans["status"] == "ok", f"phase {k}: {ans}")
            name = attention_outputs(x, k)[0][0]
            got = load_out(req, name)
            check(got.dtype == np.dtype(attention_outputs(x, k)[0][1]), f"{name}: dtype {got.dtype}")
            close(got, attention_ref(x, k), 2e-3, 2e-3, f"phase {k} {name}")
        ans = w.call(attention_request(a.tmp, x, 1, mode="npu"), 6)
        check(ans["status"] == "unavailable" and "NPU" in ans["message"], f"npu: {ans}")
        bad = attention_request(a.tmp, x, 1)
        bad["outputs"][0]["name"] = "not_scores"
        ans = w.call(bad, 7)
        check(ans["status"] == "error" and "KeyError" in ans["message"], f"bad request: {ans}")
        req = attention_request(a.tmp, x, 2)
        check(w.call(req, 8)["status"] == "ok", "the worker did not go on serving")
        close(load_out(req, "probs"), attention_ref(x, 2), 1e-3, 1e-3, "probs after an error")
        w.expect_exit_after_eof()
        check(w.stdout() == "", f"the worker wrote to its stdout: {w.stdout()!r}")
    finally:
        w.cleanup()


def sc_c_worker(a):
    """pg_worker_c: handshake, valid .npy of every dtype and shape, PG_WORKER_VALUE,
    PG_WORKER_MODES (unavailable), EOF."""
    outs = [("f32", "float32", (2, 3)), ("f16", "float16", (4,)), ("i32", "int32", ()),
            ("b", "bool", (3, 1)), ("bf16", "bfloat16", (2, 2)), ("f64", "float64", (0, 3)),
            ("i64", "int64", (2, 1, 2)), ("u8", "uint8", (5,))]
    want_np = {"bfloat16": np.uint16}
    for value, env in ((0.0, {"PG_WORKER_LOG": "1"}),
                       (1.5, {"PG_WORKER_VALUE": "1.5", "PG_WORKER_MODES": "sim,cuda"})):
        w = Worker(a.tmp, f"c_worker_{value}", a.c_worker, env=env)
        try:
            w.handshake()
            for rid in (1, 2):
                req = make_request(a.tmp, {"x": np.zeros(3, np.float16)}, outs, op="noop", total=1)
                ans = w.call(req, rid)
                check(ans == {"id": rid, "status": "ok"}, f"answer {ans}")
                for name, dt, shape in outs:
                    got = load_out(req, name)
                    wdt = np.dtype(want_np.get(dt, dt))
                    check(got.dtype == wdt and got.shape == tuple(shape),
                          f"{name}: {got.dtype}{got.shape}, expected {wdt}{tuple(shape)}")
                    if dt == "bfloat16":
                        expect = 0 if value == 0 else 0x3FC0   # 1.5 in bfloat16 bits
                    elif dt == "bool":
                        expect = value != 0
                    elif dt.startswith(("int", "uint")):
                        expect = int(value)
                    else:
                        expect = value
                    check(bool(np.all(got == expect)), f"{name}: values {got.ravel()[:4]}, expected {expect}")
            if value:
                ans = w.call(make_request(a.tmp, {}, outs[:1], mode="npu"), 3)
                check(ans["status"] == "unavailable" and "sim,cuda" in ans["message"], f"npu: {ans}")
            else:
                check("pg_worker_c: call 2 (id 2)" in w.stderr(), "PG_WORKER_LOG=1 wrote no log line")
            w.expect_exit_after_eof()
            check(w.stdout() == "", f"pg_worker_c wrote to its stdout: {w.stdout()!r}")
        finally:
            w.cleanup()


def sc_stdout_noise(a):
    """Whatever a worker writes to fd 1 — print, os.write, libc printf/write, a child
    process — lands on stderr; the protocol carries only answers."""
    w = Worker(a.tmp, "noisy_py", fake_cmd(a))
    try:
        w.handshake()
        for rid in (1, 2):
            req = fake_request(a.tmp, "noisy")
            check(w.call(req, rid)["status"] == "ok", "noisy call failed")
            check(bool(np.all(load_out(req, "y") == 1)), "noisy call wrote wrong outputs")
        w.expect_exit_after_eof()
        err = w.stderr()
        for marker in ("NOISE-print", "NOISE-oswrite", "NOISE-printf", "NOISE-libcwrite",
                       "NOISE-child"):
            check(err.count(marker + ":") == 2, f"{marker} not on the worker's stderr twice:\n{err}")
        check(w.stdout() == "", f"fd 1 still reached the worker's stdout: {w.stdout()!r}")
    finally:
        w.cleanup()
    w = Worker(a.tmp, "noisy_c", a.c_worker, env={"PG_WORKER_FAULT": "stdout_write"})
    try:
        w.handshake()
        for rid in (1, 2):
            req = make_request(a.tmp, {}, [("y", "float32", (3,))], op="noop", total=1)
            check(w.call(req, rid) == {"id": rid, "status": "ok"}, "noisy C call failed")
        w.expect_exit_after_eof()
        check(w.stderr().count("stray write(1)") == 2 and w.stderr().count("stray printf") == 2,
              f"the C worker's stray writes are not on stderr:\n{w.stderr()}")
        check(w.stdout() == "", f"fd 1 reached the C worker's stdout: {w.stdout()!r}")
    finally:
        w.cleanup()


def sc_eof(a):
    """EOF on R ends every worker within 1 s: right after the handshake, and after calls."""
    x = attention_inputs(S=4, D=8)
    workers = (("numpy", attention_exec_cmd(a), lambda: attention_request(a.tmp, x, 3)),
               ("fake", fake_cmd(a), lambda: fake_request(a.tmp, "ok")),
               ("c", a.c_worker, lambda: fake_request(a.tmp, "ok")))
    for name, cmd, request in workers:
        for calls in (0, 2):
            w = Worker(a.tmp, f"eof_{name}_{calls}", cmd)
            try:
                w.handshake()
                for rid in range(calls):
                    ans = w.call(request(), rid)
                    check(ans["status"] == "ok", f"{name}: call failed: {ans}")
                w.expect_exit_after_eof(1.0)
            finally:
                w.cleanup()


def sc_exception(a):
    """An exception in the impl is an "error" answer (text + where; traceback on
    stderr) and the worker goes on serving; so is sys.exit(0) inside a call."""
    w = Worker(a.tmp, "exception", fake_cmd(a))
    try:
        w.handshake()
        ans = w.call(fake_request(a.tmp, "raise"), 1)
        check(ans["status"] == "error", f"raise: {ans}")
        check("ValueError: fake_impl: planted failure" in ans["message"], f"message: {ans}")
        check("fake_impl.py:" in ans["message"], f"message lacks the location: {ans}")
        check("Traceback" in w.stderr(), "no traceback on stderr")
        req = fake_request(a.tmp, "ok", value=3.0)
        check(w.call(req, 2)["status"] == "ok", "no service after an exception")
        check(bool(np.all(load_out(req, "z") == 3)), "wrong output after an exception")
        ans = w.call(fake_request(a.tmp, "exit0"), 3)
        check(ans["status"] == "error" and "sys.exit(0)" in ans["message"], f"exit0: {ans}")
        check(w.call(fake_request(a.tmp, "ok"), 4)["status"] == "ok", "no service after sys.exit(0)")
        w.expect_exit_after_eof()
    finally:
        w.cleanup()
    w = Worker(a.tmp, "c_error", a.c_worker, env={"PG_WORKER_FAULT": "error"})
    try:
        w.handshake()
        for rid in (1, 2):
            ans = w.call(make_request(a.tmp, {}, [("y", "float32", (2,))]), rid)
            check(ans["status"] == "error", f"C error: {ans}")
        w.expect_exit_after_eof()
    finally:
        w.cleanup()


def sc_unavailable(a):
    """req.unavailable(msg) and sys.exit(77) answer "unavailable" with a message; the
    worker goes on serving."""
    w = Worker(a.tmp, "unavailable", fake_cmd(a))
    try:
        w.handshake()
        ans = w.call(fake_request(a.tmp, "unavailable"), 1)
        check(ans == {"id": 1, "status": "unavailable", "message": "fake_impl: no such device"},
              f"unavailable: {ans}")
        ans = w.call(fake_request(a.tmp, "exit77"), 2)
        check(ans["status"] == "unavailable", f"exit77: {ans}")
        check(w.call(fake_request(a.tmp, "ok"), 3)["status"] == "ok", "no service after unavailable")
        w.expect_exit_after_eof()
    finally:
        w.cleanup()
    w = Worker(a.tmp, "c_unavailable", a.c_worker, env={"PG_WORKER_FAULT": "unavailable"})
    try:
        w.handshake()
        ans = w.call(make_request(a.tmp, {}, [("y", "float32", (2,))]), 9)
        check(ans["status"] == "unavailable" and "unavailable" in ans["message"], f"C: {ans}")
        w.expect_exit_after_eof()
    finally:
        w.cleanup()


def sc_malformed(a):
    """A request line that is not a JSON object with an integer id: the worker answers
    nothing and exits non-zero (the runner classifies the protocol error)."""
    for name, cmd in (("py", fake_cmd(a)), ("c", a.c_worker)):
        for i, line in enumerate((b"{not json\n", b"[1, 2]\n", b'{"id": "7"}\n', b'{"op": "x"}\n')):
            w = Worker(a.tmp, f"malformed_{name}_{i}", cmd)
            try:
                w.handshake()
                check(w.call(fake_request(a.tmp, "ok"), 1)["status"] == "ok", "first call")
                w.send_raw(line)
                t0 = time.monotonic()
                check(w.read_line(5) is None, f"{name}: answered a malformed request {line!r}")
                rc = w.proc.wait(timeout=5)
                took = time.monotonic() - t0
                check(rc != 0, f"{name}: exit status 0 after a malformed request {line!r}")
                check(took <= 1.0, f"{name}: {took:.2f} s to exit after a malformed request")
            finally:
                w.cleanup()


def sc_exec_compat(a):
    """The same files as one-shot exec impls (PHASEGATE_REQUEST), unchanged behaviour:
    exit 0 with outputs, exit 77 for unavailable, non-zero with a traceback for errors."""
    def run(cmd, req, extra_env=None):
        path = os.path.join(os.path.dirname(req["in_dir"]), "request.json")
        with open(path, "w") as f:
            json.dump(req, f)
        env = dict(os.environ, PHASEGATE_REQUEST=path, PHASEGATE_MODE=req["mode"],
                   PHASEGATE_IN_DIR=req["in_dir"], PHASEGATE_OUT_DIR=req["out_dir"],
                   PHASEGATE_SUFFIX=req["suffix"], PHASEGATE_DEVICE_ID="0")
        env.pop("PHASEGATE_WORKER", None)
        env.update(extra_env or {})
        return subprocess.run(["/bin/sh", "-c", cmd], env=env, capture_output=True, timeout=30)

    req = fake_request(a.tmp, "ok", value=2.0)
    p = run(fake_cmd(a), req)
    check(p.returncode == 0, f"exec ok: exit {p.returncode}: {p.stderr.decode()}")
    check(bool(np.all(load_out(req, "y") == 2)), "exec ok: outputs")
    p = run(fake_cmd(a), fake_request(a.tmp, "unavailable"))
    check(p.returncode == 77 and b"fake_impl: no such device" in p.stderr,
          f"exec unavailable: exit {p.returncode}: {p.stderr.decode()}")
    p = run(fake_cmd(a), fake_request(a.tmp, "raise"))
    check(p.returncode not in (0, 77) and b"ValueError" in p.stderr,
          f"exec raise: exit {p.returncode}: {p.stderr.decode()}")
    x = attention_inputs(S=5, D=24)
    for k in (1, 2, 3):
        req = attention_request(a.tmp, x, k)
        p = run(attention_exec_cmd(a), req)
        check(p.returncode == 0, f"attention_exec phase {k}: exit {p.returncode}: {p.stderr.decode()}")
        name = attention_outputs(x, k)[0][0]
        close(load_out(req, name), attention_ref(x, k), 2e-3, 2e-3, f"exec phase {k}")
    p = run(attention_exec_cmd(a), attention_request(a.tmp, x, 1, mode="npu"))
    check(p.returncode == 77, f"attention_exec npu: exit {p.returncode}")
    p = run(attention_exec_cmd(a), attention_request(a.tmp, x, 1, mode="npu"),
            {"PHASEGATE_EMULATE_NPU": "1"})
    check(p.returncode == 0, f"attention_exec emulated npu: exit {p.returncode}")


def have_torch():
    return importlib.util.find_spec("torch") is not None


def sc_torch_vs_numpy(a):
    """attention_torch.py (worker) matches attention_exec.py (numpy) on one small case
    with an odd S and a D that is no multiple of a tile; mode cuda is unavailable
    without a GPU (or matches too, with one)."""
    if not have_torch():
        print("[phasegate] SKIPPED: torch is not importable by", PY)
        return SKIP
    torch_cmd = f"{PY} {a.root}/suites/attention/impl/attention_torch.py"
    x = attention_inputs(B=1, H=2, S=17, D=80, seed=3)
    tw = Worker(a.tmp, "torch_sim", torch_cmd)
    nw = Worker(a.tmp, "numpy_sim", attention_exec_cmd(a))
    cw = Worker(a.tmp, "torch_cuda", torch_cmd, mode="cuda")
    try:
        print(f"torch worker ready after {tw.handshake(60):.2f} s (import torch included)")
        nw.handshake()
        cw.handshake(60)
        tol = {1: (1e-5, 1e-5), 2: (1e-3, 0), 3: (2e-3, 2e-3)}
        for k in (1, 2, 3):
            rt, rn = attention_request(a.tmp, x, k), attention_request(a.tmp, x, k)
            t0 = time.monotonic()
            check(tw.call(rt, k)["status"] == "ok", f"torch phase {k}")
            dt = time.monotonic() - t0
            check(nw.call(rn, k)["status"] == "ok", f"numpy phase {k}")
            name = attention_outputs(x, k)[0][0]
            got, ref = load_out(rt, name), load_out(rn, name)
            check(got.dtype == ref.dtype, f"{name}: dtype {got.dtype} vs {ref.dtype}")
            close(got, ref, *tol[k], f"torch vs numpy phase {k} ({name})")
            print(f"phase {k}: torch call {dt * 1e3:.1f} ms, matches numpy")
            rc = attention_request(a.tmp, x, k, mode="cuda")
            ans = cw.call(rc, 10 + k)
            if ans["status"] == "unavailable":
                check(os.environ.get("PG_EXPECT_CUDA") != "1", f"cuda phase {k}: {ans}")
                print(f"mode cuda: unavailable ({ans['message']})")
            else:
                check(ans["status"] == "ok", f"cuda phase {k}: {ans}")
                close(load_out(rc, name), ref, *tol[k], f"torch cuda vs numpy phase {k}")
        ans = tw.call(attention_request(a.tmp, x, 1, mode="npu"), 20)
        check(ans["status"] == "unavailable", f"npu: {ans}")
        for w in (tw, nw, cw):
            w.expect_exit_after_eof(1.0)
    finally:
        for w in (tw, nw, cw):
            w.cleanup()


def sc_torch_exec_run(a):
    """attention_torch.py through the real runner as an exec impl: PASS in mode sim,
    SKIPPED in mode cuda on a host without a GPU."""
    if not have_torch():
        print("[phasegate] SKIPPED: torch is not importable by", PY)
        return SKIP
    report = os.path.join(a.tmp, "torch_exec_report.json")
    cmd = [a.phasegate, "run", "--op-dir", os.path.join(a.root, "suites", "attention"),
           "--impl", f"exec:{PY} {a.root}/suites/attention/impl/attention_torch.py",
           "--up-to-module", "3", "--case", "L3_odd_seq_17", "--modes", "sim,cuda",
           "--report", report, "--work-dir", a.tmp]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    print(p.stdout + p.stderr)
    check(p.returncode == 0, f"phasegate run exited {p.returncode}")
    with open(report) as f:
        r = json.load(f)
    pms = r["per_mode_status"]
    check(pms.get("sim") == "PASS", f"per_mode_status {pms}")
    want = ("PASS",) if os.environ.get("PG_EXPECT_CUDA") == "1" else ("SKIPPED", "PASS")
    check(pms.get("cuda") in want, f"per_mode_status {pms}")


SCENARIOS = {n[3:]: f for n, f in globals().items() if n.startswith("sc_")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--root", required=True, help="phasegate source tree")
    ap.add_argument("--tmp", required=True, help="scratch directory (emptied)")
    ap.add_argument("--c-worker", help="pg_worker_c")
    ap.add_argument("--phasegate", help="the phasegate CLI")
    a = ap.parse_args()
    a.root = os.path.abspath(a.root)
    a.tmp = os.path.abspath(a.tmp)
    shutil.rmtree(a.tmp, ignore_errors=True)
    os.makedirs(a.tmp)
    try:
        rc = SCENARIOS[a.scenario](a)
    except Fail as e:
        print(f"FAIL {a.scenario}: {e}")
        return 1
    if rc == SKIP:
        return SKIP
    print(f"PASS {a.scenario}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
