#!/usr/bin/env python3
"""numpy exec impl of mm_softmax for tests/run/python_golden: computes M1..M<up_to_module>
and writes the boundary output. `--bug` (argv) makes the softmax (M2) off by 1 %, so
phases 2 and 3 fail and bisection names boundary 2."""
import os
import sys

import numpy as np

sys.path.insert(0, os.environ["PG_TOOLS_DIR"])
from pg_exec_helper import load_request  # noqa: E402

req = load_request()
y = req.input("x", np.float32) @ req.input("w", np.float32)
if req.up_to_module == 1:
    req.write_output("y", y)
    sys.exit(0)
e = np.exp(y - y.max(axis=-1, keepdims=True))
p = e / e.sum(axis=-1, keepdims=True)
if "--bug" in sys.argv:
    p = p * np.float32(1.01)
if req.up_to_module == 2:
    req.write_output("p", p)
    sys.exit(0)
req.write_output("out", p * req.input("g", np.float32))
