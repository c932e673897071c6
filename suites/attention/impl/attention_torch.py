#!/usr/bin/env python3
"""attention_torch.py — the bundled attention op in PyTorch, as one file that works
both as a one-shot exec impl and as a persistent worker (docs/worker_protocol.md):

    phasegate run --op-dir suites/attention --up-to-module 3 --modes sim,cuda \
        --impl "worker:python3 suites/attention/impl/attention_torch.py"
    phasegate run --op-dir suites/attention --up-to-module 3 --modes sim \
        --impl "exec:python3 suites/attention/impl/attention_torch.py"

`import torch` sits at the top on purpose: it is the per-process cost (seconds) that a
worker pays once and an exec impl pays on every call.

Modes: `cpu` and `sim` compute on the CPU; `cuda` computes on cuda:<device id> when
torch.cuda.is_available(), else the call is unavailable (SKIPPED); any other mode is
unavailable. Inputs arrive as fp16 (or the case's dtype) and are widened to fp32, so
both matmuls accumulate in fp32 (TF32 off); M2 is a max-subtracted row softmax whose
probabilities are rounded to their declared dtype (fp16) before M3, as the cumulative
golden composes them.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
import pg_exec_helper  # noqa: E402

_TORCH_DTYPES = {"float16": torch.float16, "float32": torch.float32,
                 "bfloat16": torch.bfloat16, "float64": torch.float64}
_ALIASES = {"fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32",
            "bf16": "bfloat16", "fp64": "float64", "double": "float64"}


def device_for(mode, device_id, req=None):
    """The torch device of a mode, or None (after req.unavailable) when it cannot run."""
    if mode in ("cpu", "sim"):
        return torch.device("cpu")
    if mode == "cuda":
        if not torch.cuda.is_available():
            reason = f"torch {torch.__version__} sees no CUDA device"
            if req is not None:
                req.unavailable(reason)
            return None
        if device_id >= torch.cuda.device_count():
            reason = f"cuda:{device_id} does not exist ({torch.cuda.device_count()} devices)"
            if req is not None:
                req.unavailable(reason)
            return None
        return torch.device("cuda", device_id)
    if req is not None:
        req.unavailable(f"attention_torch runs modes cpu, sim and cuda, not '{mode}'")
    return None


def probs_dtype(req):
    """M2's storage dtype: the declared output (phase 2), else the case's dtype
    override (phase 3 only sees `out`), else the contract's float16."""
    if "probs" in req.outputs:
        name = req.outputs["probs"]["dtype"]
    else:
        dt = req.knobs.get("dtype")
        name = dt.get("probs") if isinstance(dt, dict) else None
        name = name if isinstance(name, str) else "float16"
    return _TORCH_DTYPES.get(_ALIASES.get(name, name), torch.float16)


def load(req, name, dev):
    """Primary input `name` on dev, widened to fp32."""
    a = req.input(name)
    return torch.from_numpy(a).to(dev).float()


def compute(req):
    dev = device_for(req.mode, req.device_id, req)
    q, k = load(req, "q", dev), load(req, "k", dev)
    scale = 1.0 / float(q.shape[-1]) ** 0.5
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale                    # M1
    if req.up_to_module == 1:
        req.write_output("scores", scores.cpu().numpy())
        return
    m = scores.amax(dim=-1, keepdim=True)                                    # M2
    e = torch.exp(scores - m)
    probs = (e / e.sum(dim=-1, keepdim=True)).to(probs_dtype(req))
    if req.up_to_module == 2:
        req.write_output("probs", probs.float().cpu().numpy())
        return
    v = load(req, "v", dev)                                                  # M3
    out = torch.matmul(probs.float(), v)
    req.write_output("out", out.cpu().numpy())


def setup():
    """Worker warm-up before the handshake: fp32 matmuls stay fp32, and in mode cuda
    the device context is created now, once, not inside the first timed call."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    mode = os.environ.get("PHASEGATE_MODE", "")
    if mode == "cuda" and torch.cuda.is_available():
        dev = device_for(mode, int(os.environ.get("PHASEGATE_DEVICE_ID", "0") or 0))
        if dev is not None:
            torch.cuda.set_device(dev)
            torch.zeros(1, device=dev).sum().item()


if __name__ == "__main__":
    pg_exec_helper.main(compute, setup)
