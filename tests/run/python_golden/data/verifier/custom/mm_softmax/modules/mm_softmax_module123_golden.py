"""Cumulative golden of phase 123 (verifier workflow): the whole op, as a dict."""

import torch

from _trace import trace  # noqa: E402


def mm_softmax_module123_golden(x, w, g):
    trace("mm_softmax_module123_golden")
    p = torch.softmax(torch.matmul(x, w), dim=-1)
    return {"out": p * g}
