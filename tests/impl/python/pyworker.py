#!/usr/bin/env python3
"""tests/impl/python: phasegate's Python worker (`python3 -m phasegate.worker`, the one
program behind `--impl python:` and Python goldens) driven directly over worker protocol
v1, the runner played by tests/impl/worker_side/worker_driver.py's Worker.

    pyworker.py SCENARIO --root SRC --tmp DIR

Scenarios: forms (tensor / tuple / dict returns, one process, module imported once,
stray prints on stderr), cast (cast_outputs and bfloat16 in and out), structural
(missing function, wrong leaf count, a leaf that is not a tensor), error (exception →
error + traceback on stderr, service goes on), unavailable (cuda without a GPU, an
unknown mode), pypto (the stand-in pypto package sees RunMode.SIM / NPU both ways),
pypto_detect (a pypto/ in the working directory, pypto importable: a pure-torch impl is no
pypto impl; npu needs torch_npu), numpy (torch
not importable: numpy arrays in, outputs still right), compat (pg_exec_helper keeps its
API). Exit 0 pass, 1 fail, 77 skipped (torch missing).
"""
import argparse
import importlib.util
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "worker_side"))
from worker_driver import Fail, Worker, check, make_request  # noqa: E402

IMPLS = os.path.join(HERE, "impls")
SKIP = 77
T, H = 6, 8


def rms_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((T, H)).astype(np.float16),
            "w_norm": rng.uniform(0.5, 1.5, H).astype(np.float16),
            "w_up": (rng.standard_normal((H, 2 * H)) * 0.125).astype(np.float16)}


def reference(ins, k):
    x, w, wu = (ins[n].astype(np.float32) for n in ("x", "w_norm", "w_up"))
    xn = (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w).astype(np.float16)
    if k == 1:
        return xn
    a = xn.astype(np.float32) @ wu
    return a if k == 2 else (a / (1 + np.exp(-a))).astype(np.float16)


OUTS = {1: [("xn", "float16", (T, H))], 2: [("a", "float32", (T, 2 * H))],
        3: [("y", "float16", (T, 2 * H))]}


class PyWorker(Worker):
    def __init__(self, tmp, name, root, mode="sim", env=None, pythonpath=(), cwd=None):
        path = list(pythonpath) + [os.path.join(root, "tools", "python"), IMPLS]
        env = dict(env or {}, PYTHONPATH=os.pathsep.join(path))
        cmd = f"'{sys.executable}' -m phasegate.worker"
        if cwd:
            cmd = f"cd '{cwd}' && exec {cmd}"
        super().__init__(tmp, name, cmd, mode, env=env)
        self.handshake(60)
        self.rid = 0

    def ask(self, req, file, function=None, cast=False):
        """One call; returns the answer (any status, with a message unless ok)."""
        self.rid += 1
        call = {"file": os.path.join(IMPLS, file), "cast_outputs": cast}
        if function:
            call["function"] = function
        self.send_raw((__import__("json").dumps(dict(req, id=self.rid, call=call)) + "\n").encode())
        ans = self.read_json(60)
        check(ans.get("id") == self.rid, f"{self.name}: answer id {ans.get('id')}, sent {self.rid}")
        check(ans.get("status") in ("ok", "unavailable", "error", "structural"),
              f"{self.name}: bad status {ans}")
        if ans["status"] != "ok":
            check(isinstance(ans.get("message"), str) and ans["message"], f"no message: {ans}")
        print(f"{self.name}: {file}::{function or '(default)'} {req['mode']} "
              f"phase {req['suffix']} -> {ans}")
        return ans


def rms_request(tmp, k, mode="sim", ins=None, outputs=None):
    return make_request(tmp, ins or rms_inputs(), outputs or OUTS[k], op="rms_gate", up_to=k,
                        total=3, mode=mode)


def expect_out(req, name, want, dtype, atol=2e-3):
    path = next(o["path"] for o in req["outputs"] if o["name"] == name)
    check(os.path.exists(path), f"output {name} was not written")
    got = np.load(path)
    check(got.dtype == np.dtype(dtype), f"{name}: dtype {got.dtype}, expected {dtype}")
    check(got.shape == want.shape, f"{name}: shape {got.shape}, expected {want.shape}")
    check(np.allclose(got.astype(np.float32), want.astype(np.float32), atol=atol, rtol=atol),
          f"{name}: values differ (max {np.max(np.abs(got.astype(np.float32) - want)):.3g})")
    return got


def need_torch():
    if importlib.util.find_spec("torch") is None:
        print("SKIP: torch is not importable")
        sys.exit(SKIP)


def sc_forms(a):
    need_torch()
    w = PyWorker(a.tmp, "forms", a.root)
    try:
        for rep in range(2):
            for k in (1, 2, 3):
                req = rms_request(a.tmp, k)
                ans = w.ask(req, "rms_gate_impl.py")
                check(ans["status"] == "ok", f"phase {k}: {ans}")
                name, dt, _ = OUTS[k][0]
                expect_out(req, name, reference(rms_inputs(), k), dt)
        err = w.stderr()
        check(err.count("stray print, loads=1 pid=") == 2,
              f"one import, two phase-1 calls expected on stderr:\n{err}")
        check(w.stdout() == "", f"the worker's stdout is not empty: {w.stdout()!r}")
        w.expect_exit_after_eof(limit=2.0)
    finally:
        w.cleanup()


def sc_cast(a):
    need_torch()
    import torch
    w = PyWorker(a.tmp, "cast", a.root)
    try:
        ins = rms_inputs()
        # phase 2's a declared float16 and bfloat16: written as returned (float32) unless cast
        for dt, npdt in (("float16", np.float16), ("bfloat16", np.uint16)):
            req = rms_request(a.tmp, 2, outputs=[("a", dt, (T, 2 * H))])
            check(w.ask(req, "rms_gate_impl.py")["status"] == "ok", "uncast call")
            expect_out(req, "a", reference(ins, 2), np.float32)
            req = rms_request(a.tmp, 2, outputs=[("a", dt, (T, 2 * H))])
            check(w.ask(req, "rms_gate_impl.py", cast=True)["status"] == "ok", "cast call")
            path = req["outputs"][0]["path"]
            got = np.load(path)
            check(got.dtype == npdt, f"cast to {dt}: dtype {got.dtype}")
            want = torch.from_numpy(reference(ins, 2)).to(getattr(torch, dt))
            if dt == "bfloat16":
                want = want.view(torch.int16).numpy().view(np.uint16)
            else:
                want = want.numpy()
            check(np.array_equal(got, want), f"cast to {dt}: values differ from torch's cast")
        # a bfloat16 input arrives as a torch bfloat16 tensor
        bits = (torch.from_numpy(ins["x"].astype(np.float32)).to(torch.bfloat16)
                .view(torch.int16).numpy().view(np.uint16))
        req = rms_request(a.tmp, 1)
        np.save(req["inputs"][0]["path"], bits)
        req["inputs"][0]["dtype"] = "bfloat16"
        ans = w.ask(req, "rms_gate_impl.py")
        check(ans["status"] == "ok", f"bfloat16 input: {ans}")
        ins_bf = dict(ins, x=torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
                      .float().numpy())
        expect_out(req, "xn", reference(ins_bf, 1), np.float16)
    finally:
        w.cleanup()


def sc_structural(a):
    need_torch()
    w = PyWorker(a.tmp, "structural", a.root)
    try:
        ans = w.ask(rms_request(a.tmp, 2), "faulty_impl.py")
        check(ans["status"] == "structural" and "rms_gate_module12_wrapper" in ans["message"]
              and ans.get("missing") == "function", f"missing function (\"missing\"): {ans}")
        ans = w.ask(rms_request(a.tmp, 1), "faulty_impl.py")
        check(ans["status"] == "structural" and "returned 2 output(s)" in ans["message"]
              and "missing" not in ans, f"wrong leaf count (nothing missing): {ans}")
        ans = w.ask(rms_request(a.tmp, 1), "faulty_impl.py", function="no_such_function")
        check(ans["status"] == "structural" and "no_such_function" in ans["message"],
              f"missing ::FUNCTION: {ans}")
        req = rms_request(a.tmp, 1, outputs=[("xn", "float32", (T, 1))])
        ans = w.ask(req, "faulty_impl.py", function="custom_name")
        check(ans["status"] == "ok", f"::FUNCTION: {ans}")
        expect_out(req, "xn", rms_inputs()["x"].astype(np.float32)[:, :1], np.float32)
        ans = w.ask(rms_request(a.tmp, 1), "no_such_file.py")
        check(ans["status"] == "structural" and "does not exist" in ans["message"], f"{ans}")
    finally:
        w.cleanup()


def sc_error(a):
    need_torch()
    w = PyWorker(a.tmp, "error", a.root)
    try:
        ans = w.ask(rms_request(a.tmp, 3), "faulty_impl.py")
        check(ans["status"] == "error" and "RuntimeError: kernel launch failed on purpose"
              in ans["message"] and "faulty_impl.py" in ans["message"], f"exception: {ans}")
        check(ans.get("exc_type") == "RuntimeError" and ans.get("exc_message") ==
              "kernel launch failed on purpose" and "stage" not in ans,
              f"the exception as data (exc_type, exc_message), not an import: {ans}")
        err = w.stderr()
        check("Traceback (most recent call last)" in err and "about to fail" in err,
              f"no traceback on stderr:\n{err}")
        req = rms_request(a.tmp, 1)
        req.pop("call", None)
        w.rid += 1
        w.send_raw((__import__("json").dumps(dict(req, id=w.rid)) + "\n").encode())
        ans = w.read_json(30)
        check(ans["status"] == "error" and '"call"' in ans["message"], f"no call object: {ans}")
        check(w.ask(rms_request(a.tmp, 1), "rms_gate_impl.py")["status"] == "ok",
              "service does not go on after an error")
    finally:
        w.cleanup()


def sc_unavailable(a):
    need_torch()
    import torch
    if torch.cuda.is_available() and os.environ.get("PG_EXPECT_CUDA") == "1":
        print("a CUDA GPU is present: cuda is not unavailable here")
    for mode, needle in (("cuda", "cuda"), ("tpu", "no device")):
        w = PyWorker(a.tmp, f"unavailable_{mode}", a.root, mode=mode)
        try:
            ans = w.ask(rms_request(a.tmp, 1, mode=mode), "rms_gate_impl.py")
            if mode == "cuda" and torch.cuda.is_available():
                check(ans["status"] == "ok", f"cuda with a GPU: {ans}")
                continue
            check(ans["status"] == "unavailable" and needle in ans["message"], f"{mode}: {ans}")
        finally:
            w.cleanup()


def sc_pypto(a):
    """The stand-in pypto impl: RunMode set both ways (module attribute, runtime_options
    of its JIT entry) in sim, and in npu with a torch_npu; npu without one unavailable."""
    need_torch()
    fakenpu = [os.path.join(HERE, "fakenpu")]
    cann = {"ASCEND_HOME_PATH": a.tmp}   # the CANN environment line npu needs (a directory)
    for mode, seen, pp, env in (("sim", "SIM", (), {}), ("npu", "NPU", fakenpu, cann),
                                ("cpu", "None", (), {}), ("npu", None, (), {}),
                                ("npu", "ASCEND_HOME_PATH", fakenpu, {"ASCEND_HOME_PATH": ""})):
        w = PyWorker(a.tmp, f"pypto_{mode}{'_npu' if pp else ''}{len(env)}{seen}", a.root,
                     mode=mode, pythonpath=pp, env=env)
        try:
            req = rms_request(a.tmp, 1, mode=mode)
            ans = w.ask(req, "pypto_impl.py")
            if seen is None:
                check(ans["status"] == "unavailable" and "torch_npu" in ans["message"],
                      f"npu without torch_npu: unavailable naming it: {ans}")
                continue
            if seen == "ASCEND_HOME_PATH":   # an NPU, but not the CANN environment line
                check(ans["status"] == "unavailable" and "ASCEND_HOME_PATH" in ans["message"]
                      and "set_env.sh" in ans["message"],
                      f"npu without ASCEND_HOME_PATH: unavailable naming it and the line: {ans}")
                continue
            check(ans["status"] == "ok", f"{mode}: {ans}")
            expect_out(req, "xn", reference(rms_inputs(), 1), np.float16)
            check(f"pypto_impl: __pypto_run_mode__ = {seen}\n" in w.stderr(),
                  f"{mode}: the impl did not see run mode {seen}; stderr:\n{w.stderr()}")
            jit = "None" if seen == "None" else seen
            check(f"runtime_options run_mode = {jit}\n" in w.stderr(),
                  f"{mode}: the JIT entry did not receive run_mode {jit}; stderr:\n{w.stderr()}")
        finally:
            w.cleanup()


def sc_pypto_detect(a):
    """pypto is what the impl imports, not what is importable: (1) a working directory
    holding a pypto/ without RunMode: a pure-torch impl runs in sim and npu is
    unavailable, no AttributeError; (2) the stand-in pypto importable (on PYTHONPATH) but
    no torch_npu: the pure-torch impl's npu is unavailable naming torch_npu, sim and cpu
    run, and its module gets no run mode."""
    need_torch()
    cwd = os.path.join(a.tmp, "cwd")
    shutil.rmtree(cwd, ignore_errors=True)
    shutil.copytree(os.path.join(HERE, "localpypto"), cwd)
    for where, kw in (("cwd", {"cwd": cwd}), ("path", {})):
        for mode in ("sim", "cpu", "npu"):
            w = PyWorker(a.tmp, f"detect_{where}_{mode}", a.root, mode=mode, **kw)
            try:
                req = rms_request(a.tmp, 1, mode=mode)
                ans = w.ask(req, "rms_gate_impl.py")
                if mode == "npu":
                    check(ans["status"] == "unavailable" and "torch_npu" in ans["message"],
                          f"{where} npu: unavailable naming torch_npu: {ans}")
                else:
                    check(ans["status"] == "ok", f"{where} {mode}: {ans}")
                    expect_out(req, "xn", reference(rms_inputs(), 1), np.float16)
                check("RunMode" not in w.stderr(), f"{where} {mode}: no RunMode error")
            finally:
                w.cleanup()


def sc_numpy(a):
    w = PyWorker(a.tmp, "numpy", a.root, pythonpath=[os.path.join(HERE, "notorch")])
    try:
        for k in (1, 2, 3):
            req = rms_request(a.tmp, k)
            ans = w.ask(req, "rms_gate_impl.py")
            check(ans["status"] == "ok", f"numpy phase {k}: {ans}")
            name, dt, _ = OUTS[k][0]
            expect_out(req, name, reference(rms_inputs(), k), dt)
        check("torch is not importable" in w.stderr(), "no note that torch is missing")
        req = rms_request(a.tmp, 2, outputs=[("a", "bfloat16", (T, 2 * H))])
        check(w.ask(req, "rms_gate_impl.py", cast=True)["status"] == "ok", "numpy bf16 cast")
        got = np.load(req["outputs"][0]["path"])
        back = (got.astype(np.uint32) << 16).view(np.float32)
        check(got.dtype == np.uint16 and np.allclose(back, reference(rms_inputs(), 2),
                                                     rtol=1e-2, atol=1e-2), "numpy bf16 bits")
        ans = w.ask(rms_request(a.tmp, 1, mode="cuda"), "rms_gate_impl.py")
        check(ans["status"] == "unavailable" and "torch" in ans["message"], f"cuda: {ans}")
    finally:
        w.cleanup()


def sc_compat(a):
    sys.path.insert(0, os.path.join(a.root, "tools"))
    import pg_exec_helper
    for n in ("UNAVAILABLE", "WORKER_PROTOCOL_VERSION", "Unavailable", "Request",
              "load_request", "serve", "main"):
        check(hasattr(pg_exec_helper, n), f"pg_exec_helper.{n} is missing")
    check(pg_exec_helper.UNAVAILABLE == 77 and issubclass(pg_exec_helper.Unavailable, SystemExit),
          "pg_exec_helper.Unavailable")
    import phasegate
    check(os.path.dirname(phasegate.__file__) ==
          os.path.join(os.path.realpath(a.root), "tools", "python", "phasegate")
          or os.path.dirname(os.path.realpath(phasegate.__file__)) ==
          os.path.realpath(os.path.join(a.root, "tools", "python", "phasegate")),
          f"pg_exec_helper did not use the source tree's package: {phasegate.__file__}")
    req = rms_request(a.tmp, 2, outputs=[("a", "bfloat16", (T, 2 * H))])
    r = pg_exec_helper.Request(raw=req)
    r.write_output("a", reference(rms_inputs(), 2))
    check(np.load(req["outputs"][0]["path"]).dtype == np.uint16, "bfloat16 via write_output")
    print("pg_exec_helper re-exports phasegate.protocol")


SCENARIOS = {n[3:]: f for n, f in globals().items() if n.startswith("sc_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--root", required=True)
    ap.add_argument("--tmp", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.tmp, ignore_errors=True)
    os.makedirs(a.tmp)
    try:
        SCENARIOS[a.scenario](a)
    except Fail as e:
        print(f"FAIL: {e}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
