"""The exec and worker impl protocols, impl side (docs/worker_protocol.md).

An exec impl is any program phasegate runs once per (case, mode) with PHASEGATE_REQUEST
pointing at a request.json (op, suffix, up_to_module, mode, case, dims, knobs, inputs,
outputs with shapes/dtypes/paths). It reads the inputs from in/<name>.npy, writes every
expected output to out/<name>.npy, and exits 0, or exits 77 when the requested mode
cannot run here (phasegate reports SKIPPED).

A worker (worker protocol version 1) serves many such requests from one process:
serve(fn) reads them from the fd pair PHASEGATE_WORKER_FDS=R,W and answers each with
"ok", "unavailable", "error" or "structural". main(fn) is either, by PHASEGATE_WORKER.

Only numpy is needed; this module never imports torch. tools/pg_exec_helper.py
re-exports this API for impls written against it.
"""
import json
import os
import sys
import time
import traceback

import numpy as np

from . import npy

UNAVAILABLE = 77
WORKER_PROTOCOL_VERSION = 1
PG_DIE_WITH_ENV = "PHASEGATE_DIE_WITH"


class Unavailable(SystemExit):
    """Raised by Request.unavailable(): this mode cannot run here (phasegate: SKIPPED).

    A SystemExit with code 77, so a one-shot exec impl exits 77 as it always did; the
    worker loop answers {"status": "unavailable", "message": reason} instead."""

    def __init__(self, reason=""):
        super().__init__(UNAVAILABLE)
        self.reason = reason


class Structural(Exception):
    """The impl does not have the shape the call needs (a missing function, the wrong
    number of outputs): the worker answers {"status": "structural", "message": …}, which
    phasegate classifies as a structural failure, not a runtime one. missing="function"
    (or "file"): the impl lacks the function (file) the phase calls — the answer says so
    ("missing"), and phasegate makes it an ERROR, as the pypto workflow routes a missing
    module symbol."""

    def __init__(self, message, missing=None):
        super().__init__(message)
        self.missing = missing


class ImportFailed(Exception):
    """Importing the impl module raised `cause` (an ImportError, a SyntaxError, an OSError
    of a shared library, …): the worker answers "error" with "stage": "import" and the
    cause's type and message as fields ("exc_type", "exc_message"), so that phasegate can
    tell an impl that cannot be imported (ERROR, structural) or an environment that cannot
    import it (ERROR, infra) from a kernel that fails (docs/worker_protocol.md)."""

    def __init__(self, path, cause):
        super().__init__(f"importing {path}: {type(cause).__name__}: {cause}")
        self.path = path
        self.cause = cause


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
        self.input_list = list(r.get("inputs", []))
        self.output_list = list(r.get("outputs", []))
        self.inputs = {t["name"]: t for t in self.input_list}
        self.outputs = {t["name"]: t for t in self.output_list}
        self.input_names = [t["name"] for t in self.input_list]
        self.output_names = [t["name"] for t in self.output_list]
        # set by the impl to say which device it ran on ("NVIDIA H200"): the answer's
        # "device_name", the report's run.device.name
        self.device_name = None

    def input_path(self, name):
        spec = self.inputs[name]
        return spec.get("path") or os.path.join(self.in_dir, name + ".npy")

    def output_path(self, name):
        spec = self.outputs[name]
        return spec.get("path") or os.path.join(self.out_dir, name + ".npy")

    def input(self, name, dtype=None):
        """The primary input `name` as a numpy array (optionally cast). A bfloat16
        input is its uint16 bits unless a dtype is given (then its values, cast)."""
        spec = self.inputs.get(name)
        if spec is None:
            raise KeyError(f"no primary input '{name}' (have {sorted(self.inputs)})")
        a = npy.load(self.input_path(name))
        if dtype is None:
            return a
        if spec.get("dtype") == npy.BFLOAT16:
            a = npy.from_bf16_bits(a)
        return a.astype(dtype)

    def write_output(self, name, array):
        """Writes output `name`, cast to its declared dtype; the shape must match."""
        spec = self.outputs.get(name)
        if spec is None:
            raise KeyError(f"'{name}' is not an expected output (expected {self.output_names})")
        want = tuple(int(x) for x in spec["shape"])
        a = np.asarray(array)
        if a.shape != want:
            raise ValueError(f"output '{name}' has shape {a.shape}, expected {want}")
        npy.save(self.output_path(name), npy.cast(a, spec["dtype"]))

    def unavailable(self, reason=""):
        """This mode cannot run here (SKIPPED): raises Unavailable, a SystemExit(77).

        One-shot exec: the process exits 77. Worker: the call is answered
        "unavailable" with the reason and the worker goes on serving."""
        if reason:
            print(f"mode '{self.mode}' unavailable: {reason}", file=sys.stderr)
        raise Unavailable(reason or f"mode '{self.mode}' is unavailable")


def load_request(path=None):
    return Request(path)
# ---- worker protocol, version 1 (docs/worker_protocol.md) ----

def _protocol_fds():
    """(R, W) from PHASEGATE_WORKER_FDS=R,W."""
    spec = os.environ.get("PHASEGATE_WORKER_FDS", "")
    try:
        r, w = (int(x) for x in spec.split(","))
    except ValueError:
        raise SystemExit(f"pg_exec_helper: PHASEGATE_WORKER_FDS must be 'R,W', got '{spec}' "
                         "(run this impl through `phasegate run --impl worker:...`)")
    return r, w


def die_with_runner(forked_child=False):
    """Nothing outlives the runner (docs/runner.md): when phasegate started this process
    itself it sets PHASEGATE_DIE_WITH=<its pid>; this process then dies (SIGKILL) with
    its parent (PR_SET_PDEATHSIG), and exits at once when the runner is already gone
    (a parent that died before the prctl). The parent may be a /bin/sh between the
    runner and Python (it carries the death signal itself, from phasegate's exec shim).
    The entry is removed: what the impl starts is not the runner's child. A process
    leased from `phasegate serve` has no such entry: the daemon ends it.
    forked_child (an exec call): a process whose parent is the runner is the sandbox
    child itself, which set the signal before its exec: the prctl (ctypes, ~5 ms) is
    skipped."""
    spec = os.environ.pop(PG_DIE_WITH_ENV, "")
    try:
        runner = int(spec)
    except ValueError:
        return
    if runner <= 0 or not sys.platform.startswith("linux"):
        return
    if forked_child and os.getppid() == runner:
        return
    try:
        import ctypes
        import signal
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == runner:
        return
    try:
        os.kill(runner, 0)   # a shell in between: the runner must still be there
    except ProcessLookupError:
        os._exit(0)
    except OSError:
        pass


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


def _clip(text, limit=2000):
    return text if len(text) <= limit else text[:limit] + "…"


def _exception_fields(e):
    """The exception as data: its type's name and its message (clipped), for phasegate to
    match against its table of environment failures (never re-read from "message")."""
    return {"exc_type": type(e).__name__, "exc_message": _clip(str(e), 1000)}


def _run_one(fn, obj):
    """Runs fn on one request object; returns the answer object (without "id")."""
    try:
        req = Request(raw=obj)
        fn(req)
        answer = {"status": "ok"}
        if req.device_name:
            answer["device_name"] = _clip(str(req.device_name), 120)
        return answer
    except Unavailable as e:
        return {"status": "unavailable", "message": e.reason or "mode unavailable"}
    except Structural as e:
        print(f"structural: {e}", file=sys.stderr)
        answer = {"status": "structural", "message": _clip(str(e))}
        if e.missing:
            answer["missing"] = e.missing
        return answer
    except ImportFailed as e:
        cause = e.cause
        traceback.print_exception(type(cause), cause, cause.__traceback__, file=sys.stderr)
        return dict({"status": "error", "stage": "import",
                     "message": _clip(str(e)) + _where(cause)}, **_exception_fields(cause))
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
        return dict({"status": "error", "message": _clip(f"{type(e).__name__}: {e}") + _where(e)},
                    **_exception_fields(e))


def serve(fn, setup=None):
    """Serves worker-protocol requests with fn(req) until end of file; never returns.

    Opens the protocol fds named by PHASEGATE_WORKER_FDS=R,W, then points fd 1 at fd 2
    so that print(), a C library's write(1, …) and child processes can never write
    into the protocol (execnet's trick). Runs setup() (if given: warm-up, device
    context) before the handshake {"phasegate_worker": 1}. For each request line: fn
    computes and writes the outputs through the Request API, and the answer is
    {"id", "status": "ok"}, "unavailable" (req.unavailable(msg), or sys.exit(77)),
    "structural" (raise Structural(msg)) or "error" (any other exception; the traceback goes to stderr, which phasegate
    captures per call). End of file on R: exit 0 at once. A line that is not a JSON
    object with an integer "id": nothing is answered and the process exits 3 (the
    runner classifies the protocol error and starts a fresh worker)."""
    die_with_runner()
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
            print(f"pg_exec_helper: pid {os.getpid()} call {rid} {answer['status']} in "
                  f"{(time.monotonic() - t0) * 1e3:.1f} ms", file=sys.stderr)
        _flush_logs()   # this call's logs before its answer
        send(dict(id=rid, **answer))


def main(fn, setup=None):
    """The whole impl in one function: serve(fn) when started as a worker
    (PHASEGATE_WORKER=1), else one exec call (fn(load_request()); req.unavailable()
    exits 77, any exception exits non-zero with its traceback)."""
    if os.environ.get("PHASEGATE_WORKER") == "1":
        serve(fn, setup)
    die_with_runner(forked_child=True)
    if setup is not None:
        setup()
    fn(load_request())
