"""The rms_gate M1 computation the impls in this directory share (torch)."""
import torch


def rms(x, w):
    xf = x.float()
    ms = (xf * xf).mean(dim=-1, keepdim=True)
    return (xf / torch.sqrt(ms + 1e-6) * w.float()).to(torch.float16)
