"""Phase 1 of scan_acc as a kernel author writes it for the workflow: a loop over NT
chunks that writes the running state into the probe buffer it is given as a keyword
(inspection_h, [B, H, NT, D]) when there is one."""
import os

import torch

CHUNK = 4


def _trace(what):
    path = os.environ.get("SCAN_ACC_TRACE")
    if path:
        with open(path, "a") as f:
            f.write(what + "\n")


def _scan(x, inspection_h, drift_from):
    b, h, t, d = x.shape
    state = torch.zeros(b, h, d, dtype=x.dtype)
    for i in range(t // CHUNK):
        state = state + x[:, :, i * CHUNK:(i + 1) * CHUNK].sum(dim=2)
        if drift_from is not None and i >= drift_from:
            state = state + 0.01        # the bug: a bias from iteration drift_from on
        if inspection_h is not None:
            inspection_h[:, :, i] = state
    return state


def scan_acc_module1_wrapper(x, inspection_h=None):
    _trace("impl kwargs=%s" % ("inspection_h" if inspection_h is not None else "none"))
    return _scan(x, inspection_h, None)


def drift_wrapper(x, inspection_h=None):
    _trace("impl kwargs=%s" % ("inspection_h" if inspection_h is not None else "none"))
    return _scan(x, inspection_h, 2)


def no_kwargs_wrapper(x):
    """An impl that does not take the probe buffer."""
    return _scan(x, None, None)
