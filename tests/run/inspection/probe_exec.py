#!/usr/bin/env python3
"""exec: impl of chunk_accum module 1 for tests/run/inspection (numpy, through
tools/pg_exec_helper.py): the probe `acc` (running sum per iteration) is written as the
extra output `inspection_acc` beside the boundary output `total`, chosen by argv[1]:
  correct   the running sum
  drift     a bias creeps into the accumulation from iteration 5 on
  skip      forgets the probe (writes `total` only)"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
from pg_exec_helper import load_request  # noqa: E402

variant = sys.argv[1] if len(sys.argv) > 1 else "correct"
req = load_request()
x = req.input("x", np.float32)
acc = np.zeros_like(x)
run = np.zeros(x.shape[1:], dtype=np.float32)
for i in range(x.shape[0]):
    run = run + x[i]
    if variant == "drift" and i >= 5:
        run = run + np.float32(0.01)
    acc[i] = run
req.write_output("total", acc[-1])
if variant != "skip":
    req.write_output("inspection_acc", acc)
