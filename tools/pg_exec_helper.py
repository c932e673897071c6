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
"""
import json
import os
import sys

import numpy as np

UNAVAILABLE = 77

_DTYPES = {
    "float32": np.float32, "float16": np.float16, "float64": np.float64,
    "int8": np.int8, "uint8": np.uint8, "int32": np.int32, "int64": np.int64,
    "bool": np.bool_,
}


class Request:
    """One call: what to compute, where the inputs are, what to write."""

    def __init__(self, path=None):
        path = path or os.environ.get("PHASEGATE_REQUEST")
        if not path:
            raise SystemExit("pg_exec_helper: PHASEGATE_REQUEST is not set "
                             "(run this impl through `phasegate run --impl exec:...`)")
        with open(path) as f:
            self.raw = json.load(f)
        r = self.raw
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
        """Ends the process with exit 77: this mode cannot run here (SKIPPED)."""
        if reason:
            print(f"mode '{self.mode}' unavailable: {reason}", file=sys.stderr)
        sys.exit(UNAVAILABLE)


def load_request(path=None):
    return Request(path)
