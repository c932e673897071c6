"""The exec and worker impl protocols, impl side (docs/worker_protocol.md).

An exec impl is any program phasegate runs once per (case, mode) with PHASEGATE_REQUEST
pointing at a request.json (op, suffix, up_to_module, mode, case, dims, knobs, inputs,
outputs with shapes/dtypes/paths). It reads the inputs from in/<name>.npy, writes every
expected output to out/<name>.npy, and exits 0, or exits 77 when the requested mode
cannot run here (phasegate reports SKIPPED).

A worker (worker protocol version 1) serves many such requests from one process:
serve(fn) reads them from the fd pair PHASEGATE_WORKER_FDS=R,W and answers each with
"ok", "unavailable", "error" or "structural". main(fn) is either, by PHASEGATE_WORKER.
When fd R is a socket it also offers version 1.1 (tensors in call memory, a memfd the
runner passes with the request): req.input() is then a view of that memory, no copy,
and req.write_output() copies straight into the output's place there.

Only numpy is needed; this module never imports torch. tools/pg_exec_helper.py
re-exports this API for impls written against it.
"""
import json
import mmap
import os
import socket
import stat
import sys
import time
import traceback

import numpy as np

from . import npy

UNAVAILABLE = 77
WORKER_PROTOCOL_VERSION = 1
# protocol v1.1 (docs/worker_protocol.md "Version 1.1"): the handshake's "shm" value
WORKER_SHM_VERSION = 1
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

    def __init__(self, path=None, raw=None, memory=None):
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
        # v1.1: the call memory (a writable buffer) the tensors' "offset"s point into;
        # None: files
        self.memory = memory if isinstance(r.get("memory"), dict) else None
        self.wrong_outputs = {}   # name -> (dtype, shape) the impl produced instead

    def tensor_view(self, spec):
        """The numpy view of a tensor in call memory (bfloat16: its uint16 bits)."""
        dt = npy.numpy_dtype(spec["dtype"])
        shape = tuple(int(x) for x in spec["shape"])
        n = 1
        for d in shape:
            n *= d
        if n == 0:
            return np.empty(shape, dt)
        return np.frombuffer(self.memory, dt, n, int(spec["offset"])).reshape(shape)

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
        if self.memory is not None:
            a = self.tensor_view(spec)   # the call memory itself: valid during the call
        else:
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
        if self.memory is not None:
            np.copyto(self.tensor_view(spec), npy.cast(a, spec["dtype"]), casting="unsafe")
        else:
            npy.save(self.output_path(name), npy.cast(a, spec["dtype"]))

    def output(self, name):
        """Output `name`'s own buffer in call memory (protocol v1.1), as a writable numpy
        array of its declared dtype and shape (bfloat16: uint16 bits) to write in place;
        None when this call uses files (then use write_output)."""
        spec = self.outputs.get(name)
        if spec is None:
            raise KeyError(f"'{name}' is not an expected output (expected {self.output_names})")
        return self.tensor_view(spec) if self.memory is not None else None

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


class ProtocolError(Exception):
    """The runner's request breaks protocol v1.1 (no call memory, a tensor outside it):
    answered "error" with this message; the call is not run."""


class _Lines:
    """Request lines from fd R. A socket is read with recvmsg, so that a descriptor the
    runner passes with a line (SCM_RIGHTS: the call memory) is taken with it; plain
    read() would drop it. Any other fd (a pipe) is read as a file."""

    def __init__(self, fd):
        self.fds = []
        self.buf = b""
        self.sock = None
        if _is_socket(fd):
            self.sock = socket.socket(fileno=fd)
        else:
            self.file = os.fdopen(fd, "rb")

    def readline(self):
        """(line, fds received with it); (b"", []) at end of file."""
        if self.sock is None:
            return self.file.readline(), []
        while b"\n" not in self.buf:
            space = socket.CMSG_SPACE(4 * 4)
            flags = getattr(socket, "MSG_CMSG_CLOEXEC", 0)
            data, anc, mflags, _ = self.sock.recvmsg(1 << 16, space, flags)
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    n = len(payload) // 4
                    self.fds.extend(np.frombuffer(payload[:4 * n], np.int32).tolist())
            if mflags & getattr(socket, "MSG_CTRUNC", 0):
                raise ProtocolError("a descriptor passed with the request was truncated")
            if not data:
                line, self.buf = self.buf, b""
                return line, self._take()
            self.buf += data
        line, _, self.buf = self.buf.partition(b"\n")
        return line + b"\n", self._take()

    def _take(self):
        fds, self.fds = self.fds, []
        return fds


def _is_socket(fd):
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False


class _CallMemory:
    """The call memory of protocol v1.1: the runner's memfd, mapped once and kept until
    the runner passes another (a larger one, or after a new lease)."""

    def __init__(self):
        self.map = None
        self.size = 0

    def adopt(self, fds):
        """Maps the last memfd received (closing every fd received)."""
        if not fds:
            return
        keep = fds[-1]
        for fd in fds[:-1]:
            os.close(fd)
        try:
            size = os.fstat(keep).st_size
            new = mmap.mmap(keep, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(keep)   # the mapping keeps the memory
        old, self.map, self.size = self.map, new, size
        if old is not None:
            try:
                old.close()
            except BufferError:   # the impl still holds a view: the mapping dies with it
                pass

    def check(self, obj):
        """The call memory of request obj, after checking that it holds every tensor of
        the request (ProtocolError naming what does not fit)."""
        mem = obj["memory"]
        need = mem.get("size")
        if self.map is None:
            raise ProtocolError("the request's tensors are in call memory, but no memfd came "
                                "with this or an earlier request")
        if not isinstance(need, int) or need < 0 or need > self.size:
            raise ProtocolError(f"the request's call memory size {need!r} is not within the "
                                f"{self.size} bytes mapped")
        for kind in ("inputs", "outputs"):
            for t in obj.get(kind, []):
                off, n = t.get("offset"), t.get("nbytes")
                want = npy.numpy_dtype(t["dtype"]).itemsize
                for d in t["shape"]:
                    want *= int(d)
                if not isinstance(off, int) or not isinstance(n, int) or off < 0 or \
                        n != want or off + n > need:
                    raise ProtocolError(f"{kind[:-1]} '{t.get('name')}' at offset {off!r}, "
                                        f"{n!r} bytes ({want} for its dtype and shape) does "
                                        f"not fit the call memory of {need} bytes")
        return self.map


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


def _described(req):
    """The v1.1 answer's "outputs": each output as written, or as the impl produced it
    when that did not fit its declared dtype and shape (then it was not written)."""
    out = []
    for spec in req.output_list:
        dtype, shape = req.wrong_outputs.get(spec["name"], (spec["dtype"], spec["shape"]))
        out.append({"name": spec["name"], "dtype": dtype, "shape": [int(d) for d in shape]})
    return out


def _run_one(fn, obj, memory=None):
    """Runs fn on one request object; returns the answer object (without "id")."""
    try:
        req = Request(raw=obj, memory=memory)
        fn(req)
        answer = {"status": "ok"}
        if req.device_name:
            answer["device_name"] = _clip(str(req.device_name), 120)
        if req.memory is None:
            return answer
        answer["memory"] = obj["memory"]["size"]
        if req.wrong_outputs:
            answer["outputs"] = _described(req)
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
    rf = _Lines(r)
    wf = os.fdopen(w, "wb")
    # v1.1 needs descriptors passed with the lines: a socket, as phasegate gives
    shm = rf.sock is not None and os.environ.get("PHASEGATE_WORKER_NO_SHM") != "1"
    memory = _CallMemory()
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
    hello = {"phasegate_worker": WORKER_PROTOCOL_VERSION}
    if shm:
        hello["shm"] = WORKER_SHM_VERSION
    send(hello)
    while True:
        fds = []
        try:
            line, fds = rf.readline()
        except (OSError, ProtocolError) as e:
            print(f"pg_exec_helper: reading a request failed ({e}): exiting", file=sys.stderr)
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
        answer, mem = None, None
        try:
            memory.adopt(fds)
            if isinstance(obj.get("memory"), dict):
                mem = memory.check(obj)
        except (OSError, ValueError, KeyError, TypeError, ProtocolError) as e:
            answer = {"status": "error", "message": _clip(f"phasegate worker protocol v1.1: "
                                                          f"{type(e).__name__}: {e}")}
        if answer is None:
            answer = _run_one(fn, obj, mem)
        if os.environ.get("PG_EXEC_HELPER_TRACE") == "1":
            print(f"pg_exec_helper: pid {os.getpid()} call {rid} {answer['status']} in "
                  f"{(time.monotonic() - t0) * 1e3:.1f} ms "
                  f"({'call memory' if mem is not None else 'files'})", file=sys.stderr)
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
