"""phasegate exec-impl helper: the Python side of the `exec:COMMAND` protocol.

An exec impl is any program phasegate runs once per (case, mode) with
PHASEGATE_REQUEST pointing at a request.json (op, suffix, up_to_module, mode, case,
dims, knobs, inputs, outputs with shapes/dtypes/paths). It reads the inputs from
in/<name>.npy, writes every expected output to out/<name>.npy, and exits 0, or exits
77 when the requested mode cannot run here (phasegate reports SKIPPED).

    from pg_exec_helper import load_request
    req = load_request()
    if req.mode == "npu" and not have_npu():
        req.unavailable("no NPU on this host")
    q = req.input("q")
    ...
    req.write_output("scores", scores)   # cast to the declared dtype, shape checked

Only numpy is needed. bfloat16 tensors are not supported (numpy has no bfloat16).

The same impl can also serve many calls from one process (`worker:COMMAND`, worker
protocol version 1, DESIGN.md §6, docs/worker_protocol.md): write the computation as
one function of a Request and end the file with

    def compute(req):
        ...                                # req.input / req.write_output / req.unavailable

    if __name__ == "__main__":
        pg_exec_helper.main(compute)       # worker when PHASEGATE_WORKER=1, else one exec call

`serve(fn)` is the worker loop alone. This module never imports torch; impls do.
"""
import json
import os
import sys
import time
import traceback

import numpy as np

UNAVAILABLE = 77
WORKER_PROTOCOL_VERSION = 1

_DTYPES = {
    "float32": np.float32, "float16": np.float16, "float64": np.float64,
    "int8": np.int8, "uint8": np.uint8, "int32": np.int32, "int64": np.int64,
    "bool": np.bool_,
}


class Unavailable(SystemExit):
    """Raised by Request.unavailable(): this mode cannot run here (phasegate: SKIPPED).

    A SystemExit with code 77, so a one-shot exec impl exits 77 as it always did; the
    worker loop answers {"status": "unavailable", "message": reason} instead."""

    def __init__(self, reason=""):
        super().__init__(UNAVAILABLE)
        self.reason = reason


class Request:
    """One call: what to compute, where the inputs are, what to write.

    Request(path) reads a request.json (default: $PHASEGATE_REQUEST); Request(raw=obj)
    takes the object itself (a worker request line, the same fields plus "id")."""

    def __init__(self, path=None, raw=None):
        if raw is None:
            path = path or os.environ.get("PHASEGATE_REQUEST")
            if not path:
                raise SystemExit("pg_exec_helper: PHASEGATE_REQUEST is not set "
                                 "(run this impl through `phasegate run --impl exec:...`)")
            with open(path) as f:
                raw = json.load(f)
        if not isinstance(raw, dict):
            raise ValueError("the request is not a JSON object")
        self.raw = raw
        r = self.raw
        self.id = r.get("id")
        self.op = r["op"]
        self.suffix = r["suffix"]
        self.up_to_module = int(r["up_to_module"])
        self.total_modules = int(r.get("total_modules", self.up_to_module))
        self.mode = r["mode"]
        self.case = r["case"]
        self.device_id = int(r.get("device_id", 0))
        self.dims = dict(r.get("dims", {}))
        self.knobs = dict(r.get("knobs", {}))
        self.in_dir = r.get("in_dir") or os.environ.get("PHASEGATE_IN_DIR")
        self.out_dir = r.get("out_dir") or os.environ.get("PHASEGATE_OUT_DIR")
        self.inputs = {t["name"]: t for t in r.get("inputs", [])}
        self.outputs = {t["name"]: t for t in r.get("outputs", [])}
        self.output_names = [t["name"] for t in r.get("outputs", [])]

    def input(self, name, dtype=None):
        """The primary input `name` as a numpy array (optionally cast)."""
        spec = self.inputs.get(name)
        if spec is None:
            raise KeyError(f"no primary input '{name}' (have {sorted(self.inputs)})")
        a = np.load(spec.get("path") or os.path.join(self.in_dir, name + ".npy"))
        return a.astype(dtype) if dtype is not None else a

    def write_output(self, name, array):
        """Writes output `name`, cast to its declared dtype; the shape must match."""
        spec = self.outputs.get(name)
        if spec is None:
            raise KeyError(f"'{name}' is not an expected output (expected {self.output_names})")
        want = tuple(int(x) for x in spec["shape"])
        a = np.asarray(array)
        if a.shape != want:
            raise ValueError(f"output '{name}' has shape {a.shape}, expected {want}")
        dt = _DTYPES.get(spec["dtype"])
        if dt is None:
            raise ValueError(f"output '{name}': dtype {spec['dtype']} is not supported by numpy")
        path = spec.get("path") or os.path.join(self.out_dir, name + ".npy")
        np.save(path, np.ascontiguousarray(a.astype(dt)))

    def unavailable(self, reason=""):
        """This mode cannot run here (SKIPPED): raises Unavailable, a SystemExit(77).

        One-shot exec: the process exits 77. Worker: the call is answered
        "unavailable" with the reason and the worker goes on serving."""
        if reason:
            print(f"mode '{self.mode}' unavailable: {reason}", file=sys.stderr)
        raise Unavailable(reason or f"mode '{self.mode}' is unavailable")


def load_request(path=None):
    return Request(path)


# ---- worker protocol, version 1 (DESIGN.md §6, docs/worker_protocol.md) ----

def _protocol_fds():
    """(R, W) from PHASEGATE_WORKER_FDS=R,W."""
    spec = os.environ.get("PHASEGATE_WORKER_FDS", "")
    try:
        r, w = (int(x) for x in spec.split(","))
    except ValueError:
        raise SystemExit(f"pg_exec_helper: PHASEGATE_WORKER_FDS must be 'R,W', got '{spec}' "
                         "(run this impl through `phasegate run --impl worker:...`)")
    return r, w


def _flush_logs():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass


def _exit_now(code):
    """Ends the process at once: no interpreter teardown (a framework's atexit hooks,
    thread joins) between EOF and exit."""
    _flush_logs()
    os._exit(code)


def _where(exc):
    """'file.py:LINE in func' of the innermost frame of exc's traceback ('' if none)."""
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return ""
    f = tb[-1]
    return f" (at {os.path.basename(f.filename)}:{f.lineno} in {f.name})"


def _run_one(fn, obj):
    """Runs fn on one request object; returns the answer object (without "id")."""
    try:
        fn(Request(raw=obj))
        return {"status": "ok"}
    except Unavailable as e:
        return {"status": "unavailable", "message": e.reason or "mode unavailable"}
    except SystemExit as e:
        # an exec-style impl calling sys.exit(77) still means "unavailable"
        if e.code == UNAVAILABLE:
            return {"status": "unavailable", "message": "the impl exited with status 77"}
        traceback.print_exc(file=sys.stderr)
        return {"status": "error",
                "message": f"the impl called sys.exit({e.code!r}) while serving a call"}
    except BaseException as e:  # noqa: B902 — any failure of the impl is an answer
        if isinstance(e, KeyboardInterrupt):
            raise
        traceback.print_exc(file=sys.stderr)
        text = f"{type(e).__name__}: {e}"
        if len(text) > 2000:
            text = text[:2000] + "…"
        return {"status": "error", "message": text + _where(e)}


def serve(fn, setup=None):
    """Serves worker-protocol requests with fn(req) until end of file; never returns.

    Opens the protocol fds named by PHASEGATE_WORKER_FDS=R,W, then points fd 1 at fd 2
    so that print(), a C library's write(1, …) and child processes can never write
    into the protocol (execnet's trick). Runs setup() (if given: warm-up, device
    context) before the handshake {"phasegate_worker": 1}. For each request line: fn
    computes and writes the outputs through the Request API, and the answer is
    {"id", "status": "ok"}, "unavailable" (req.unavailable(msg), or sys.exit(77)) or
    "error" (any other exception; the traceback goes to stderr, which phasegate
    captures per call). End of file on R: exit 0 at once. A line that is not a JSON
    object with an integer "id": nothing is answered and the process exits 3 (the
    runner classifies the protocol error and starts a fresh worker)."""
    r, w = _protocol_fds()
    if r in (1, 2) or w in (0, 1, 2) or r == w:
        raise SystemExit(f"pg_exec_helper: PHASEGATE_WORKER_FDS={r},{w}: the protocol cannot "
                         "share stdin/stdout/stderr (they stay free for logs)")
    _flush_logs()
    for fd in (r, w):
        os.set_inheritable(fd, False)   # children the impl starts never hold the protocol
    rf = os.fdopen(r, "rb")
    wf = os.fdopen(w, "wb")
    os.dup2(2, 1)   # fd 1 is now stderr: stray output can never reach the protocol

    def send(obj):
        line = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        try:
            wf.write(line)
            wf.flush()
        except OSError:
            _exit_now(0)   # the runner is gone (EPIPE)

    if setup is not None:
        setup()
    _flush_logs()
    send({"phasegate_worker": WORKER_PROTOCOL_VERSION})
    while True:
        try:
            line = rf.readline()
        except OSError:
            line = b""
        if not line:
            _exit_now(0)
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            print(f"pg_exec_helper: request line is not JSON ({e}): exiting", file=sys.stderr)
            _exit_now(3)
        rid = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(rid, int) or isinstance(rid, bool):
            print("pg_exec_helper: request is not a JSON object with an integer \"id\": exiting",
                  file=sys.stderr)
            _exit_now(3)
        t0 = time.monotonic()
        answer = _run_one(fn, obj)
        if os.environ.get("PG_EXEC_HELPER_TRACE") == "1":
            print(f"pg_exec_helper: call {rid} {answer['status']} in "
                  f"{(time.monotonic() - t0) * 1e3:.1f} ms", file=sys.stderr)
        _flush_logs()   # this call's logs before its answer
        send(dict(id=rid, **answer))


def main(fn, setup=None):
    """The whole impl in one function: serve(fn) when started as a worker
    (PHASEGATE_WORKER=1), else one exec call (fn(load_request()); req.unavailable()
    exits 77, any exception exits non-zero with its traceback)."""
    if os.environ.get("PHASEGATE_WORKER") == "1":
        serve(fn, setup)
    if setup is not None:
        setup()
    fn(load_request())
