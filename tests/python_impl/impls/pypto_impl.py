"""A pypto-style impl (tests/python_impl): imports the stand-in pypto package and
returns the run mode the worker set, encoded in the output (SIM: 1, NPU: 2, unset: 0)."""
import sys

import pypto  # noqa: F401 — the stand-in in tests/python_impl/impls/pypto
import torch

CODES = {"SIM": 1.0, "NPU": 2.0}


def rms_gate_module1_wrapper(x, w_norm, w_up):
    mode = globals().get("__pypto_run_mode__")
    print(f"pypto_impl: __pypto_run_mode__ = {mode!r}", file=sys.stderr)
    code = CODES.get(mode.name, -1.0) if isinstance(mode, pypto.RunMode) else 0.0
    return torch.full(tuple(x.shape), code, dtype=torch.float16)
