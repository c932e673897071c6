"""phasegate's Python worker: `python3 -m phasegate.worker` (docs/python.md).

One persistent process (worker protocol v1, and v1.1 when the runner passes call memory:
phasegate.protocol.serve) that calls Python functions by file and name: the impl modules behind `--impl python:FILE.py[::FUNCTION]`
(`<op>_module<suffix>_wrapper(*primary_inputs)`, written for the pypto workflow) and
Python goldens. Each request is the worker request plus

    "call": {"file": "/abs/path/module.py", "function": "name", "cast_outputs": false}

("fallback": a function to call when the module lacks "function": <op>_wrapper of the
integrated <op>_impl.py in the last phase, docs/pypto.md "L0 ops".)

and, for a golden's CPU reproducer, "precision": "float64" or "bfloat16" in the call: the
floating inputs are cast to it before the call (outputs still cast as asked).

The worker imports the file (once per path), converts the primary inputs (request
order) to torch tensors on the mode's device (cpu/sim: CPU, cuda: cuda:<id> when
torch.cuda.is_available(), npu: npu:<id> when torch_npu imports and torch.npu is
available — host tensors for a pypto impl —, otherwise the mode is unavailable; numpy
arrays when torch is not importable). For a pypto impl — one whose module imports the
real pypto (RunMode.SIM / .NPU), never merely because `import pypto` succeeds — in modes
sim / npu it sets the run mode both ways the seed's workflow does:
`module.__pypto_run_mode__ = pypto.RunMode.SIM / .NPU` (the dispatcher template) and
runtime_options["run_mode"] on the module's pypto JIT entries. Then it calls the function and writes the returned tensor /
tuple / list / dict leaves as the request's outputs in declared order (a dict whose keys
are exactly the output names: by name). With "cast_outputs": true each leaf is cast to
its declared dtype (goldens); otherwise it is written as returned, so a dtype bug stays
visible to the runner.

Every call runs with TILE_FWK_DEVICE_ID = the request's device_id (set before the impl
module is imported: the workflow's modules read it at import time) and, in modes npu /
cuda, torch.npu.set_device / torch.cuda.set_device on it. Mode npu also needs the
environment lines of preflight.ENV_LINES (ASCEND_HOME_PATH): unavailable, naming the
variable, without them.

With "kind": "make_inputs" the call is the op's own input code instead
(docs/pypto.md "Inputs from make_inputs"): `make_inputs(case)` of eval/test_inputs.py,
called with the suite's case object (a dict that records which keys it reads), returns
the inputs; the request's outputs are the contract's primary inputs, written from what
it returned (a dict by name, or a tuple / list in PRIMARY_INPUT_ORDER, the module
attribute, else contract order); "result_file" gets {"read": keys read, "order": the
argument order, "scalars": non-tensor inputs by name}. An impl or golden request with
"arguments": {"order", "scalars"} is called with that order, scalars passed as such.

With protocol v1.1 (docs/worker_protocol.md "Version 1.1") the inputs are torch tensors
made on the call memory itself (torch.frombuffer: no copy; moved to the mode's device as
usual) and each returned leaf is copied into its output's place there. A leaf whose dtype
or shape is not the declared one (after the cast, for goldens) is not written: the answer
describes it, and the runner reports the wrong dtype or shape as it does for a file.

Answers: ok; unavailable (the mode cannot run here, with the reason); error (an
exception, traceback on stderr, its type and message as "exc_type" / "exc_message", and
"stage": "import" when importing the impl raised it); structural (no such function or
file, naming it, with "missing"; the wrong number of returned leaves; a leaf that is not
a tensor).
"""
import ast
import importlib
import importlib.util
import inspect
import json
import os
import sys
import types

import numpy as np

from . import npy
from .preflight import missing_env_lines
from .protocol import ImportFailed, Structural, Unavailable, serve

# modes whose pypto run mode the seed's dispatcher sets
_PYPTO_RUN_MODES = {"sim": "SIM", "npu": "NPU"}
_TORCH_DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32",
                 "int64", "bool")


def _import_torch():
    """torch, or None when it is not importable (then the worker uses numpy)."""
    if os.environ.get("PHASEGATE_PYTHON_NO_TORCH") == "1":
        return None
    try:
        import torch
    except ImportError as e:
        print(f"phasegate.worker: torch is not importable ({e}); using numpy arrays",
              file=sys.stderr)
        return None
    return torch


def _is_pypto_name(name):
    return isinstance(name, str) and (name == "pypto" or name.startswith("pypto."))


def _imports_pypto(path):
    """Whether the Python file at path imports pypto anywhere (`import pypto`,
    `import pypto.frontend as f`, `from pypto import …`, also inside functions, as the
    seed's dispatcher does its late import); False when it cannot be read or parsed."""
    if not path or not path.endswith(".py"):
        return False
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(_is_pypto_name(a.name) for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_pypto_name(node.module):
            return True
    return False


def _is_pypto_thing(v):
    """A pypto module, or a function, class or object that pypto defines."""
    try:
        if isinstance(v, types.ModuleType):
            return _is_pypto_name(v.__name__)
        return _is_pypto_name(getattr(v, "__module__", None)) or \
            _is_pypto_name(getattr(type(v), "__module__", None))
    except Exception:  # noqa: BLE001 — an object whose attributes raise is not pypto's
        return False


def _is_jit_entry(v):
    """A pypto JIT entry (pypto.frontend.jit's wrapper): an object of a pypto type that
    keeps runtime options."""
    try:
        return not isinstance(v, (type, types.ModuleType)) and \
            _is_pypto_name(getattr(type(v), "__module__", None)) and \
            hasattr(v, "_runtime_options")
    except Exception:  # noqa: BLE001
        return False


def _namespaces(mod, fn):
    """The impl module's namespace, and the function's when it comes from elsewhere."""
    out = [vars(mod)]
    g = getattr(fn, "__globals__", None)
    if isinstance(g, dict) and g is not out[0]:
        out.append(g)
    return out


class _RecordingCase(dict):
    """The case dict make_inputs gets: records every key it reads (item access, get,
    `in`, pop, setdefault). Iterating it (keys, items, values, a copy, **case) counts as
    reading every key, so code that copies the case is never told a knob went unread."""

    def __init__(self, d):
        super().__init__(d)
        self.read = set()

    def __getitem__(self, k):
        self.read.add(k)
        return super().__getitem__(k)

    def get(self, k, default=None):
        self.read.add(k)
        return super().get(k, default)

    def __contains__(self, k):
        self.read.add(k)
        return super().__contains__(k)

    def pop(self, k, *default):
        self.read.add(k)
        return super().pop(k, *default)

    def setdefault(self, k, default=None):
        self.read.add(k)
        return super().setdefault(k, default)

    def _all(self):
        self.read.update(super().keys())

    def __iter__(self):
        self._all()
        return super().__iter__()

    def keys(self):
        self._all()
        return super().keys()

    def items(self):
        self._all()
        return super().items()

    def values(self):
        self._all()
        return super().values()

    def copy(self):
        self._all()
        return dict(super().items())


def _is_scalar(v):
    return isinstance(v, (bool, int, float)) or v is None or isinstance(v, str)


def _leaf_dtype(leaf, torch):
    if torch is not None and isinstance(leaf, torch.Tensor):
        return str(leaf.dtype).replace("torch.", "")
    return np.asarray(leaf).dtype.name


class Worker:
    """The state of one worker process: torch (or None) and the imported modules."""

    def __init__(self):
        self.torch = None
        self.modules = {}      # path (as requested, and absolute) -> module
        self.pypto_users = {}  # module path -> whether the impl imports pypto
        self.device_names = {}  # torch device string -> its name, asked once

    def setup(self):
        # paid before the handshake, not in the first timed call
        self.torch = _import_torch()

    # ---- device and tensors

    def device(self, mode, device_id, pypto):
        """The torch device string of a mode; raises Unavailable where it cannot run.
        pypto: the pypto module when the impl is a pypto impl (else None)."""
        torch = self.torch
        if mode in ("cpu", "sim"):
            return "cpu"
        if mode == "cuda":
            if torch is None:
                raise Unavailable("mode 'cuda' needs torch, which is not importable here")
            if not torch.cuda.is_available():
                raise Unavailable("torch.cuda.is_available() is False on this host (no CUDA "
                                  "GPU, driver or CUDA build of torch)")
            if device_id >= torch.cuda.device_count():
                raise Unavailable(f"CUDA device {device_id} does not exist "
                                  f"({torch.cuda.device_count()} CUDA devices)")
            return f"cuda:{device_id}"
        if mode == "npu":
            # as the seed's _mode_available("npu"): torch_npu imports, an NPU is there and
            # the CANN environment line is set, for every impl (a pypto impl too): never a
            # CPU pass labelled npu. What is missing first is named, the environment line
            # with it (a torch_npu that cannot load its libraries often means that).
            missing = missing_env_lines(mode, os.environ)
            env_note = "; " + "; ".join(f"{v} {why}" for v, why in missing) if missing else ""
            if torch is None:
                raise Unavailable("mode 'npu' needs torch and torch_npu; torch is not "
                                  "importable here" + env_note)
            try:
                import torch_npu  # noqa: F401 — registers the npu device with torch
            except Exception as e:  # noqa: BLE001 — ImportError, or a broken CANN install
                raise Unavailable(f"mode 'npu' needs torch_npu, which is not importable here "
                                  f"({type(e).__name__}: {e}){env_note}")
            npu = getattr(torch, "npu", None)
            if npu is None or not npu.is_available():
                raise Unavailable("mode 'npu': torch_npu imports but torch.npu.is_available() "
                                  "is False on this host (no NPU device or driver)" + env_note)
            if missing:
                var, why = missing[0]
                raise Unavailable(f"mode 'npu' needs the environment variable {var} ({why})")
            count = getattr(npu, "device_count", None)
            if callable(count) and device_id >= count():
                raise Unavailable(f"NPU device {device_id} does not exist ({count()} NPU "
                                  "devices)")
            # a pypto impl gets host tensors: pypto's RunMode.NPU moves the data, as in the
            # seed's runner
            return "cpu" if pypto is not None else f"npu:{device_id}"
        raise Unavailable(f"mode '{mode}' has no device in phasegate.worker (cpu and sim run "
                          "on the CPU, cuda on cuda:<id>, npu on npu:<id>)")

    def set_device(self, mode, device_id):
        """The current device of the call's framework, as the workflow's drivers set it
        (torch.npu.set_device(TILE_FWK_DEVICE_ID)): npu and cuda modes only, and only
        where the framework has that device (device() made sure it exists)."""
        torch = self.torch
        if torch is None:
            return
        if mode == "npu":
            npu = getattr(torch, "npu", None)
            setter = getattr(npu, "set_device", None)
            if callable(setter):
                setter(device_id)
        elif mode == "cuda" and torch.cuda.is_available():
            torch.cuda.set_device(device_id)

    def device_name(self, device):
        """The name of a cuda:<i> / npu:<i> device ("NVIDIA H200"), None on the CPU or
        when torch cannot say: it only labels the report, never fails a call."""
        if device == "cpu" or self.torch is None:
            return None
        if device not in self.device_names:
            kind, _, index = device.partition(":")
            backend = getattr(self.torch, kind, None)
            try:
                self.device_names[device] = str(backend.get_device_name(int(index or 0)))
            except Exception:  # noqa: BLE001 — an old torch_npu without the call, say
                self.device_names[device] = None
        return self.device_names[device]

    def to_input(self, req, name, device):
        spec = req.inputs[name]
        if req.memory is not None and self.torch is not None:
            t = self.memory_tensor(req, spec)
            return t.to(device) if device != "cpu" else t
        a = req.tensor_view(spec) if req.memory is not None else npy.load(req.input_path(name))
        bf16 = spec.get("dtype") == npy.BFLOAT16
        torch = self.torch
        if torch is None:
            if bf16:
                raise Unavailable(f"input '{name}' is bfloat16, which needs torch (not "
                                  "importable here; numpy has no bfloat16)")
            return a
        a = np.ascontiguousarray(a)
        if bf16:   # its bits, as uint16 (which torch 1.x cannot take): reinterpret
            t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        else:
            t = torch.from_numpy(a)
        return t.to(device) if device != "cpu" else t

    def memory_tensor(self, req, spec):
        """A torch tensor on the call memory (protocol v1.1), no copy."""
        torch = self.torch
        dt = getattr(torch, spec["dtype"] if spec["dtype"] != "int" else "int64")
        shape = [int(d) for d in spec["shape"]]
        n = 1
        for d in shape:
            n *= d
        if n == 0:
            return torch.empty(shape, dtype=dt)
        return torch.frombuffer(req.memory, dtype=dt, count=n,
                                offset=int(spec["offset"])).view(shape)

    def write_leaf(self, req, leaf, spec, cast):
        """Writes one returned leaf: to its .npy file, or (v1.1) into its place in call
        memory when its dtype and shape are the declared ones (else it is described in
        the answer, not written)."""
        if req.memory is None:
            npy.save(req.output_path(spec["name"]), self.to_array(leaf, spec, cast))
            return
        torch = self.torch
        want = tuple(int(d) for d in spec["shape"])
        if torch is not None and isinstance(leaf, torch.Tensor):
            t = leaf.detach()
            if cast and spec["dtype"] in _TORCH_DTYPES:
                t = t.to(getattr(torch, spec["dtype"]))
            got = str(t.dtype).replace("torch.", "")
            if got != spec["dtype"] or tuple(t.shape) != want:
                self.wrong(req, spec, got, tuple(t.shape))
                return
            if t.device.type == "cpu" and not t.is_conj() and not t.is_neg():
                # numpy's copy: torch's copy_ of a CPU tensor splits it over its intra-op
                # threads, which costs more than the copy itself at these sizes
                a = t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()
                np.copyto(req.tensor_view(spec), a, casting="unsafe")
            else:
                self.memory_tensor(req, spec).copy_(t)   # a device tensor: one D2H copy
            return
        a = self.to_array(leaf, spec, cast)
        got = npy.dtype_name(a.dtype)
        if spec["dtype"] == npy.BFLOAT16 and got == "uint16":
            got = npy.BFLOAT16   # bfloat16 bits (numpy has no bfloat16)
        if got != spec["dtype"] or a.shape != want:
            self.wrong(req, spec, got, a.shape)
            return
        np.copyto(req.tensor_view(spec), a)

    @staticmethod
    def wrong(req, spec, got, shape):
        if got not in npy.DTYPES:
            raise Structural(f"output '{spec['name']}': the function returned dtype {got}, "
                             f"which phasegate does not know (declared {spec['dtype']})")
        req.wrong_outputs[spec["name"]] = (got, [int(d) for d in shape])

    def to_array(self, leaf, spec, cast):
        """One returned leaf as (numpy array, for the .npy); bfloat16 as its bits."""
        name, want = spec["name"], spec["dtype"]
        torch = self.torch
        if torch is not None and isinstance(leaf, torch.Tensor):
            t = leaf.detach()
            if cast and want in _TORCH_DTYPES:
                t = t.to(getattr(torch, want))
            t = t.cpu().contiguous()
            if t.dtype == torch.bfloat16:
                return t.view(torch.int16).numpy().view(np.uint16)
            return t.numpy()
        if leaf is None:
            raise Structural(f"output '{name}': the function returned None for it")
        a = np.asarray(leaf)
        if a.dtype == object or a.dtype.kind in "USV":
            raise Structural(f"output '{name}': the function returned a "
                             f"{type(leaf).__name__}, not a tensor or array")
        return npy.cast(a, want) if cast else a

    def in_precision(self, x, precision):
        """A floating input cast to `precision` ("float64", "bfloat16"), so a golden's
        torch code computes in it (the CPU reproducer, docs/diagnosis.md); numpy arrays
        only to float64 (numpy has no bfloat16: left as they are)."""
        torch = self.torch
        if torch is not None and isinstance(x, torch.Tensor):
            return x.to(getattr(torch, precision)) if x.is_floating_point() else x
        if isinstance(x, np.ndarray) and x.dtype.kind == "f" and precision == "float64":
            return x.astype(np.float64)
        return x

    # ---- modules and calls

    def module(self, path):
        mod = self.modules.get(path)   # as the request names it: no syscall per call
        if mod is not None:
            return mod
        given, path = path, os.path.abspath(path)
        mod = self.modules.get(path)
        if mod is not None:
            self.modules[given] = mod
            return mod
        if not os.path.isfile(path):
            raise Structural(f"the Python file {path} does not exist")
        # sibling modules import as they do when the file is run from its directory
        folder = os.path.dirname(path)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        stem = os.path.splitext(os.path.basename(path))[0]
        name = stem if stem not in sys.modules else f"{stem}__pg{len(self.modules)}"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException as e:
            del sys.modules[name]   # a failed import is retried by the next call
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise   # sys.exit(77) while importing still means "unavailable"
            # the import itself failed (a missing module or shared library, a syntax
            # error): said as such, with the exception as data (protocol.ImportFailed)
            raise ImportFailed(path, e) from e
        self.modules[path] = self.modules[given] = mod
        return mod

    def pypto_for(self, mod, fn):
        """The real pypto package when the impl uses it, else None. "Uses" is read from
        what the impl imports — its module's import statements, and pypto modules or
        objects in its namespace (or the function's, when it comes from another module)
        — never from `import pypto` merely succeeding: a pure-torch impl is no pypto impl
        whatever is importable. And only the real API counts: a `pypto` without
        RunMode.SIM / RunMode.NPU (a directory named pypto in the working directory,
        say) is not pypto."""
        path = getattr(mod, "__file__", None)
        key = os.path.abspath(path) if path else id(mod)
        uses = self.pypto_users.get(key)
        if uses is None:
            uses = _imports_pypto(path) or any(_is_pypto_thing(v)
                                               for ns in _namespaces(mod, fn)
                                               for v in list(ns.values()))
            self.pypto_users[key] = uses
        if not uses:
            return None
        pypto = sys.modules.get("pypto")
        if pypto is None:   # imported lazily inside the impl's functions: import it as it would
            try:
                pypto = importlib.import_module("pypto")
            except Exception:  # noqa: BLE001 — then the impl's own import fails, visibly
                return None
        run_mode = getattr(pypto, "RunMode", None)
        if not all(hasattr(run_mode, m) for m in _PYPTO_RUN_MODES.values()):
            return None
        return pypto

    @staticmethod
    def set_run_mode(pypto, mode, mod, fn):
        """The run mode, both ways the seed's workflow sets it: the module attribute its
        published dispatcher template sets (impl_module.__pypto_run_mode__ =
        pypto.RunMode.SIM / NPU), and runtime_options["run_mode"] on every pypto JIT
        entry in the impl's namespace (@pypto.frontend.jit(runtime_options={"run_mode":
        …}), normalised by the entry's own _set_run_mode when it has one)."""
        run_mode = getattr(pypto.RunMode, _PYPTO_RUN_MODES[mode])
        mod.__pypto_run_mode__ = run_mode
        fmod = sys.modules.get(getattr(fn, "__module__", None) or "")
        if fmod is not None and fmod is not mod:
            fmod.__pypto_run_mode__ = run_mode
        seen = set()
        for ns in _namespaces(mod, fn):
            for v in list(ns.values()):
                if id(v) in seen or not _is_jit_entry(v):
                    continue
                seen.add(id(v))
                opts = getattr(v, "_runtime_options", None)
                if not isinstance(opts, dict):
                    opts = {}
                    v._runtime_options = opts
                opts["run_mode"] = run_mode
                normalise = getattr(v, "_set_run_mode", None)
                if callable(normalise):
                    normalise()

    # ---- make_inputs (docs/pypto.md "Inputs from make_inputs")

    def make_inputs(self, req, call):
        path = call["file"]
        where = "make_inputs"   # the runner names the file and the case
        mod = self.module(path)
        fn = getattr(mod, "make_inputs", None)
        if not callable(fn):
            raise Structural(f"{os.path.basename(path)} has no function make_inputs(case)")
        names = [spec["name"] for spec in req.output_list]
        order = getattr(mod, "PRIMARY_INPUT_ORDER", None)
        if order is None:
            order = list(names)
        elif not isinstance(order, (list, tuple)) or not all(isinstance(n, str) for n in order):
            raise Structural(f"PRIMARY_INPUT_ORDER must be a list of input names, "
                             f"not {order!r}")
        order = list(order)
        missing = [n for n in names if n not in order]
        if missing:
            raise Structural(f"PRIMARY_INPUT_ORDER {order} lacks the contract's "
                             f"primary input(s) {missing}")
        case = _RecordingCase(req.knobs)
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}
        # inputs are made once on the CPU; each mode's worker moves them to its device
        result = fn(case, device="cpu") if "device" in params else fn(case)
        if isinstance(result, dict):
            values = dict(result)
        elif isinstance(result, (tuple, list)):
            if len(result) != len(order):
                raise Structural(f"{where} returned {len(result)} value(s), "
                                 f"PRIMARY_INPUT_ORDER has {len(order)}: {order}")
            values = dict(zip(order, result))
        elif len(order) == 1:
            values = {order[0]: result}
        else:
            raise Structural(f"{where} returned a {type(result).__name__}; expected "
                             f"a dict of the inputs by name, or a tuple in the order {order}")
        scalars = {}
        for n in order:
            if n not in values:
                raise Structural(f"{where} returned no '{n}' (it returned "
                                 f"{sorted(map(str, values))})")
            if isinstance(values[n], np.generic):   # np.float32(0.5): the number
                values[n] = values[n].item()
            if n not in names:
                if not _is_scalar(values[n]):
                    raise Structural(f"{where}: '{n}' is a {type(values[n]).__name__}, and the "
                                     "contract declares no primary input of that name (declare "
                                     "it, or make it a number)")
                scalars[n] = values[n]
        for spec in req.output_list:
            n, leaf = spec["name"], values[spec["name"]]
            want = tuple(int(x) for x in spec["shape"])
            if isinstance(leaf, (bool, int, float)):
                scalars[n] = leaf   # passed as such, kept as a tensor for goldens and data
                leaf = np.full(want, leaf, dtype=npy.numpy_dtype(spec["dtype"])) \
                    if spec["dtype"] != npy.BFLOAT16 else leaf
            if self.torch is not None and isinstance(leaf, self.torch.Tensor):
                leaf = leaf.detach().cpu()
            elif not isinstance(leaf, np.ndarray):
                raise Structural(f"{where}: input '{n}' is a {type(leaf).__name__}, not a "
                                 "tensor, an array or a number")
            got = tuple(leaf.shape)
            if got != want:
                raise Structural(f"{where}: input '{n}' has shape {list(got)}, the contract "
                                 f"declares {list(want)} for this case")
            dt = _leaf_dtype(leaf, self.torch)
            if dt != spec["dtype"]:
                raise Structural(f"{where}: input '{n}' is {dt}, the contract (with the case's "
                                 f"dtype) declares {spec['dtype']}")
            self.write_leaf(req, leaf, spec, False)
        with open(call["result_file"], "w") as f:
            json.dump({"read": sorted(str(k) for k in case.read), "order": order,
                       "scalars": scalars}, f)

    def arguments(self, req, device):
        """The call's positional arguments: the inputs in request order, or in the order
        make_inputs gave ("arguments"), its non-tensor inputs passed as such."""
        spec = req.raw.get("arguments")
        if not isinstance(spec, dict):
            return [self.to_input(req, n, device) for n in req.input_names]
        scalars = spec.get("scalars") or {}
        return [scalars[n] if n in scalars else self.to_input(req, n, device)
                for n in spec.get("order") or req.input_names]

    def call(self, req):
        call = req.raw.get("call")
        if not isinstance(call, dict) or not isinstance(call.get("file"), str):
            raise ValueError('the request has no "call" object with a "file" (phasegate.worker '
                             'serves python: impls and Python goldens)')
        if call.get("kind") == "make_inputs":
            return self.make_inputs(req, call)
        fname = call.get("function") or f"{req.op}_module{req.suffix}_wrapper"
        cast = bool(call.get("cast_outputs", False))
        if call["file"] not in self.modules and not os.path.isfile(call["file"]):
            # python:DIR without this phase's staged file
            raise Structural(f"{call['file']} does not exist (phase {req.suffix} calls "
                             f"{fname}(*primary_inputs) in it)", missing="file")
        # the workflow's device line, before the import: modules read it at import time
        # (ST_DEVICE_ID = int(os.environ.get("TILE_FWK_DEVICE_ID", 0)))
        os.environ["TILE_FWK_DEVICE_ID"] = str(req.device_id)
        mod = self.module(call["file"])
        fn = getattr(mod, fname, None)
        fallback = call.get("fallback")   # the integrated <op>_impl.py's <op>_wrapper
        if not callable(fn) and fallback and callable(getattr(mod, fallback, None)):
            fname, fn = fallback, getattr(mod, fallback)
        if not callable(fn):
            also = f" nor '{fallback}'" if fallback else ""
            raise Structural(f"{call['file']} has no function '{fname}'{also} (phase "
                             f"{req.suffix} calls {fname}(*primary_inputs))", missing="function")
        pypto = self.pypto_for(mod, fn) if req.mode in _PYPTO_RUN_MODES else None
        device = self.device(req.mode, req.device_id, pypto)
        self.set_device(req.mode, req.device_id)
        # a pypto impl gets host tensors; its device is still the mode's
        req.device_name = self.device_name(device if pypto is None
                                           else f"{req.mode}:{req.device_id}")
        args = self.arguments(req, device)
        precision = call.get("precision")
        if precision:   # the CPU reproducer: the golden rerun in another precision
            args = [self.in_precision(x, precision) for x in args]
        # the pypto workflow's inspection protocol (docs/pypto.md "Inspection probes"): the
        # impl writes each probe into a buffer it takes as a keyword argument
        kw_names = list(call.get("inspect_kwargs") or [])
        kwargs = {n: self.probe_buffer(req.outputs[n], device) for n in kw_names}
        probe = call.get("inspect_probe")
        if kwargs or probe is not None:
            self.check_signature(call["file"], fname, fn, req.input_names, args, kwargs)
        if pypto is not None:
            self.set_run_mode(pypto, req.mode, mod, fn)
        result = fn(*args, **kwargs)
        if probe is not None:   # a golden companion module_<k>_inspect: {probe: tensor}
            result = self.pick_probe(call["file"], fname, result, probe)
        returned = req.output_list[:len(req.output_list) - len(kw_names)]
        leaves = self.leaves(result, [t["name"] for t in returned])
        if len(leaves) != len(returned):
            raise Structural(f"{fname} returned {len(leaves)} output(s), phase {req.suffix} "
                             f"has {len(returned)}: {[t['name'] for t in returned]}")
        for leaf, spec in zip(leaves, returned):
            self.write_leaf(req, leaf, spec, cast)
        for n in kw_names:
            self.write_leaf(req, kwargs[n], req.outputs[n], cast)

    def probe_buffer(self, spec, device):
        """A probe's buffer for the impl to write into: NaN-filled (as phasegate's outputs
        are), so a probe the impl never writes shows as drift from iteration 0."""
        shape = tuple(int(x) for x in spec["shape"])
        torch = self.torch
        if torch is None:
            return np.full(shape, np.nan, dtype=np.dtype(spec["dtype"]))
        return torch.full(shape, float("nan"), dtype=getattr(torch, spec["dtype"]),
                          device=device)

    @staticmethod
    def check_signature(path, fname, fn, names, args, kwargs):
        """A function that cannot take this call's arguments is the file's shape, not a
        runtime error: said naming file and function before the call (inspection calls
        only: an ordinary call's TypeError stays the call's own)."""
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return   # a builtin or C function: the call itself will say
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:
            # names, not counts: what the worker says passes the golden's number barrier
            given = f"the primary inputs ({', '.join(names)})"
            if kwargs:
                given += " and the keyword buffer(s) " + ", ".join(kwargs)
            raise Structural(f"{path}::{fname}{sig} cannot be called with {given}: {e}")

    @staticmethod
    def pick_probe(path, fname, result, probe):
        """The probe's entry of what a module_<k>_inspect companion returned."""
        if not isinstance(result, dict):
            raise Structural(f"{path}::{fname} returned a {type(result).__name__}, not a dict "
                             f"of probes ({{'{probe}': tensor}})")
        for key in (probe, f"inspection_{probe}"):
            if key in result:
                return result[key]
        raise Structural(f"{path}::{fname} returns no probe '{probe}' (its probes: "
                         f"{', '.join(map(str, result)) or 'none'})")

    def leaves(self, result, names):
        """The returned value's leaves in order: a tensor is one leaf; tuples and lists
        are flattened; a dict keyed exactly by the output names is taken by name, any
        other dict in insertion order."""
        if isinstance(result, dict):
            if set(result) == set(names):
                return [result[n] for n in names]
            return [leaf for v in result.values() for leaf in self.leaves(v, ())]
        if isinstance(result, (tuple, list)):
            return [leaf for v in result for leaf in self.leaves(v, ())]
        return [result]


def main():
    worker = Worker()
    serve(worker.call, worker.setup)


if __name__ == "__main__":
    main()
