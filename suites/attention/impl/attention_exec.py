#!/usr/bin/env python3
"""attention_exec.py — the bundled attention op as an exec impl (Python + numpy).

Shows how a torch / pypto user plugs an impl into phasegate without writing C:

    phasegate run --op-dir suites/attention --up-to-module 2 \
        --impl "exec:/usr/bin/python3 suites/attention/impl/attention_exec.py"

phasegate calls it once per (case, mode) with PHASEGATE_REQUEST set; it computes the
cumulative output of modules M1..Mk (k = up_to_module) and writes the boundary
output. Mode `sim` always runs (numpy on the CPU); `npu` is unavailable (exit 77)
unless PHASEGATE_EMULATE_NPU=1. Replace the numpy bodies by your torch / device calls.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
from pg_exec_helper import load_request  # noqa: E402


def main():
    req = load_request()
    if req.mode == "npu" and os.environ.get("PHASEGATE_EMULATE_NPU") != "1":
        req.unavailable("no NPU here (set PHASEGATE_EMULATE_NPU=1 to emulate one)")
    if req.mode not in ("sim", "npu"):
        req.unavailable(f"unknown mode {req.mode}")
    q = req.input("q", np.float32)
    k = req.input("k", np.float32)
    d = q.shape[-1]
    scores = (q @ np.swapaxes(k, -1, -2)) * np.float32(1.0 / np.sqrt(d))   # M1
    if req.up_to_module == 1:
        req.write_output("scores", scores)
        return
    m = scores.max(axis=-1, keepdims=True)                                 # M2
    e = np.exp(scores - m)
    probs = e / e.sum(axis=-1, keepdims=True)
    probs_dtype = req.outputs.get("probs", {}).get("dtype", "float16")
    probs = probs.astype(np.float16 if probs_dtype == "float16" else np.float32)
    if req.up_to_module == 2:
        req.write_output("probs", probs)
        return
    v = req.input("v", np.float32)                                         # M3
    req.write_output("out", probs.astype(np.float32) @ v)


if __name__ == "__main__":
    main()
