#!/usr/bin/env python3
"""attention_exec.py — the bundled attention op as a Python + numpy impl.

Shows how a torch / pypto user plugs an impl into phasegate without writing C. The
same file works as a one-shot exec impl (one process per call) and as a persistent
worker (one process serves many calls, worker protocol v1, docs/worker_protocol.md):

    phasegate run --op-dir suites/attention --up-to-module 2 \
        --impl "exec:/usr/bin/python3 suites/attention/impl/attention_exec.py"
    phasegate run --op-dir suites/attention --up-to-module 2 \
        --impl "worker:/usr/bin/python3 suites/attention/impl/attention_exec.py"

Each call computes the cumulative output of modules M1..Mk (k = up_to_module) and
writes the boundary output. Mode `sim` always runs (numpy on the CPU); `npu` is
unavailable unless PHASEGATE_EMULATE_NPU=1. Replace the numpy bodies by your torch /
device calls (attention_torch.py is the torch version).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
import pg_exec_helper  # noqa: E402


def probs_dtype(req):
    """The dtype M2 stores probabilities in: the declared output (phase 2), else the
    case's dtype override (phase 3 only sees `out`), else the contract's float16."""
    if "probs" in req.outputs:
        return req.outputs["probs"]["dtype"]
    dt = req.knobs.get("dtype")
    if isinstance(dt, dict) and isinstance(dt.get("probs"), str):
        return {"fp16": "float16", "half": "float16", "fp32": "float32",
                "float": "float32"}.get(dt["probs"], dt["probs"])
    return "float16"


def compute(req):
    """One call: req says the phase, mode, case and where inputs/outputs live."""
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
    probs = probs.astype(np.float16 if probs_dtype(req) == "float16" else np.float32)
    if req.up_to_module == 2:
        req.write_output("probs", probs)
        return
    v = req.input("v", np.float32)                                         # M3
    req.write_output("out", probs.astype(np.float32) @ v)


if __name__ == "__main__":
    pg_exec_helper.main(compute)
