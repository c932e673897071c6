# Derived from module_interfaces.yaml — do not hand-edit. On YAML changes, regenerate.
"""Cumulative golden of phase 1 of scan_acc, and the workflow's inspection companion."""
import os

import torch

CHUNK = 4


def _trace(what):
    path = os.environ.get("SCAN_ACC_TRACE")
    if path:
        with open(path, "a") as f:
            f.write(what + "\n")


def scan_acc_module1_golden(x):
    b, h, t, d = x.shape
    return x.reshape(b, h, t // CHUNK, CHUNK, d).sum(dim=3).sum(dim=2)


def module_1_inspect(x):
    """The state h after each chunk: [B, H, NT, D]."""
    _trace("golden module_1_inspect")
    b, h, t, d = x.shape
    return {"h": torch.cumsum(x.reshape(b, h, t // CHUNK, CHUNK, d).sum(dim=3), dim=2)}
