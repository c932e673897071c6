"""Stage golden of phase 12 (Pro workflow): M1 then M2."""

import torch

from _trace import trace  # noqa: E402


def mm_softmax_golden_stage12(x, w, g):
    trace("mm_softmax_golden_stage12")
    y = torch.matmul(x, w)
    return torch.softmax(y, dim=-1)
