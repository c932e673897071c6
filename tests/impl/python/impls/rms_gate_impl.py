"""rms_gate (tests/data/pypto/custom/rms_gate) as a pypto-workflow impl module: one
`rms_gate_module<suffix>_wrapper(*primary_inputs)` per phase, torch on the inputs'
device (numpy when the worker has no torch). Phase 1 returns a tensor, phase 12 a
one-tuple, phase 123 a dict keyed by the output name: every form the worker maps.
PG_PYIMPL_BUG=1 scales the M2 output by 1.01 (proves a run can fail)."""
import os

import numpy as np

try:
    import torch
except ImportError:
    torch = None

LOADS = [0]          # module executions (the worker imports each file once)
LOADS[0] += 1


def _rms(x, w):
    if torch is not None and isinstance(x, torch.Tensor):
        xf = x.float()
        ms = (xf * xf).mean(dim=-1, keepdim=True)
        return (xf / torch.sqrt(ms + 1e-6) * w.float()).to(torch.float16)
    xf = x.astype(np.float32)
    ms = np.mean(xf * xf, axis=-1, keepdims=True, dtype=np.float32)
    return (xf / np.sqrt(ms + np.float32(1e-6)) * w.astype(np.float32)).astype(np.float16)


def _up(xn, w_up):
    if torch is not None and isinstance(xn, torch.Tensor):
        a = xn.float() @ w_up.float()
    else:
        a = xn.astype(np.float32) @ w_up.astype(np.float32)
    if os.environ.get("PG_PYIMPL_BUG") == "1":
        a = a * 1.01
    return a


def rms_gate_module1_wrapper(x, w_norm, w_up):
    print(f"rms_gate_module1_wrapper: stray print, loads={LOADS[0]} pid={os.getpid()}")
    return _rms(x, w_norm)


def rms_gate_module12_wrapper(x, w_norm, w_up):
    return (_up(_rms(x, w_norm), w_up),)


def rms_gate_module123_wrapper(x, w_norm, w_up):
    a = _up(_rms(x, w_norm), w_up)
    if torch is not None and isinstance(a, torch.Tensor):
        y = (a * torch.sigmoid(a)).to(torch.float16)
    else:
        y = (a / (np.float32(1) + np.exp(-a))).astype(np.float16)
    return {"y": y}
