#!/usr/bin/env python3
"""pypto-style exec impl of rms_gate (tests/opdir/pypto): numpy stands in for the device.
Computes modules M1..M<up_to_module> and writes the boundary output. Mode `npu` is
unavailable here (exit 77, SKIPPED); `--bug` (argv) scales the M2 output by 1.01 to
prove the test can fail."""
import os
import sys

import numpy as np

sys.path.insert(0, os.environ["PG_TOOLS_DIR"])
from pg_exec_helper import load_request  # noqa: E402

req = load_request()
if req.mode == "npu":
    req.unavailable("no NPU in the test environment")
x = req.input("x", np.float32)
w_norm = req.input("w_norm", np.float32)
ms = np.mean(x * x, axis=-1, keepdims=True, dtype=np.float32)
xn = (x / np.sqrt(ms + np.float32(1e-6)) * w_norm).astype(np.float16)
if req.up_to_module == 1:
    req.write_output("xn", xn)
    sys.exit(0)
a = xn.astype(np.float32) @ req.input("w_up", np.float32)
if "--bug" in sys.argv:
    a = a * np.float32(1.01)
if req.up_to_module == 2:
    req.write_output("a", a)
    sys.exit(0)
req.write_output("y", a / (np.float32(1) + np.exp(-a)))
