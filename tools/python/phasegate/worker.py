"""phasegate's Python worker: `python3 -m phasegate.worker` (docs/python.md).

One persistent process (worker protocol v1, phasegate.protocol.serve) that calls Python
functions by file and name: the impl modules behind `--impl python:FILE.py[::FUNCTION]`
(`<op>_module<suffix>_wrapper(*primary_inputs)`, written for the pypto workflow) and
Python goldens. Each request is the worker request plus

    "call": {"file": "/abs/path/module.py", "function": "name", "cast_outputs": false}

The worker imports the file (once per path), converts the primary inputs (request
order) to torch tensors on the mode's device (cpu/sim: CPU, cuda: cuda:<id>, npu:
npu:<id> with torch_npu, CPU for a pypto impl without it; numpy arrays when torch is
not importable), sets
`module.__pypto_run_mode__ = pypto.RunMode.SIM / .NPU` for pypto impls in modes sim /
npu as the seed's dispatcher does, calls the function and writes the returned tensor /
tuple / list / dict leaves as the request's outputs in declared order (a dict whose keys
are exactly the output names: by name). With "cast_outputs": true each leaf is cast to
its declared dtype (goldens); otherwise it is written as returned, so a dtype bug stays
visible to the runner.

Answers: ok; unavailable (the mode cannot run here, with the reason); error (an
exception, traceback on stderr); structural (no such function, naming it; the wrong
number of returned leaves; a leaf that is not a tensor).
"""
import importlib
import importlib.util
import os
import sys

import numpy as np

from . import npy
from .protocol import Structural, Unavailable, serve

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


class Worker:
    """The state of one worker process: torch (or None) and the imported modules."""

    def __init__(self):
        self.torch = None
        self.modules = {}      # absolute path -> module

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
            why = "torch is not importable here"
            if torch is not None:
                try:
                    import torch_npu  # noqa: F401 — registers the npu device with torch
                    if torch.npu.is_available():
                        return f"npu:{device_id}"
                    why = "torch.npu.is_available() is False on this host"
                except ImportError as e:
                    why = f"torch_npu is not importable here ({e})"
            if pypto is not None:
                return "cpu"   # pypto's RunMode.NPU moves the data, as in the seed's runner
            raise Unavailable(f"mode 'npu' needs torch_npu (or a pypto impl): {why}")
        raise Unavailable(f"mode '{mode}' has no device in phasegate.worker (cpu and sim run "
                          "on the CPU, cuda on cuda:<id>, npu on npu:<id>)")

    def to_input(self, req, name, device):
        spec = req.inputs[name]
        a = npy.load(req.input_path(name))
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

    # ---- modules and calls

    def module(self, path):
        path = os.path.abspath(path)
        mod = self.modules.get(path)
        if mod is not None:
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
        except BaseException:
            del sys.modules[name]   # a failed import is retried by the next call
            raise
        self.modules[path] = mod
        return mod

    @staticmethod
    def pypto_for(mode):
        """The pypto module when a call in this mode is a pypto call: mode sim or npu and
        pypto imported (by the impl) or importable; else None."""
        if mode not in _PYPTO_RUN_MODES:
            return None
        pypto = sys.modules.get("pypto")
        if pypto is None and importlib.util.find_spec("pypto") is not None:
            pypto = importlib.import_module("pypto")
        return pypto

    def call(self, req):
        call = req.raw.get("call")
        if not isinstance(call, dict) or not isinstance(call.get("file"), str):
            raise ValueError('the request has no "call" object with a "file" (phasegate.worker '
                             'serves python: impls and Python goldens)')
        fname = call.get("function") or f"{req.op}_module{req.suffix}_wrapper"
        cast = bool(call.get("cast_outputs", False))
        if not os.path.isfile(call["file"]):   # python:DIR without this phase's staged file
            raise Structural(f"{call['file']} does not exist (phase {req.suffix} calls "
                             f"{fname}(*primary_inputs) in it)")
        mod = self.module(call["file"])
        fn = getattr(mod, fname, None)
        if not callable(fn):
            raise Structural(f"{call['file']} has no function '{fname}' (phase {req.suffix} "
                             f"calls {fname}(*primary_inputs))")
        pypto = self.pypto_for(req.mode)
        device = self.device(req.mode, req.device_id, pypto)
        args = [self.to_input(req, n, device) for n in req.input_names]
        if pypto is not None:
            # the seed's dispatcher: impl_module.__pypto_run_mode__ = pypto.RunMode.SIM / NPU
            mod.__pypto_run_mode__ = getattr(pypto.RunMode, _PYPTO_RUN_MODES[req.mode])
        result = fn(*args)
        leaves = self.leaves(result, req.output_names)
        if len(leaves) != len(req.output_list):
            raise Structural(f"{fname} returned {len(leaves)} output(s), phase {req.suffix} "
                             f"has {len(req.output_list)}: {req.output_names}")
        for leaf, spec in zip(leaves, req.output_list):
            npy.save(req.output_path(spec["name"]), self.to_array(leaf, spec, cast))

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
