"""Stage golden of phase 123 (Pro workflow): the whole op, as a dict."""

import torch

from _trace import trace  # noqa: E402


def mm_softmax_golden_stage123(x, w, g):
    trace("mm_softmax_golden_stage123")
    p = torch.softmax(torch.matmul(x, w), dim=-1)
    return {"out": p * g}
