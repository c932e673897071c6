"""Cumulative golden of phase 12 (verifier workflow): M1 then M2."""

import torch

from _trace import trace  # noqa: E402


def mm_softmax_module12_golden(x, w, g):
    trace("mm_softmax_module12_golden")
    y = torch.matmul(x, w)
    return torch.softmax(y, dim=-1)
