#!/usr/bin/env python3
"""Fault-zoo exec impl: correct attention (numpy), plus one seeded protocol bug chosen
by argv[1]: `extra` writes an undeclared extra output, `missing` writes no output,
`shape` writes the output with a wrong shape, `dtype` writes it as float64 instead of the
declared dtype, `fail` exits 3 after printing to stderr."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
from pg_exec_helper import load_request  # noqa: E402

fault = sys.argv[1] if len(sys.argv) > 1 else "none"
req = load_request()
q, k, v = (req.input(n, np.float32) for n in ("q", "k", "v"))
s = q @ np.swapaxes(k, -1, -2) / np.sqrt(np.float32(q.shape[-1]))
e = np.exp(s - s.max(axis=-1, keepdims=True))
p = (e / e.sum(axis=-1, keepdims=True)).astype(np.float16)
res = {1: s, 2: p, 3: p.astype(np.float32) @ v}[req.up_to_module]
name = req.output_names[0]
if fault == "missing":
    sys.exit(0)
if fault == "fail":
    print("exec_fault: device error 0x2a", file=sys.stderr)
    sys.exit(3)
if fault == "dtype":
    np.save(os.path.join(req.out_dir, name + ".npy"), res.astype(np.float64))
    sys.exit(0)
if fault == "shape":
    np.save(os.path.join(req.out_dir, name + ".npy"), res[..., :-1].astype(np.float16))
    sys.exit(0)
req.write_output(name, res)
if fault == "extra":
    np.save(os.path.join(req.out_dir, "debug_scores.npy"), s)
