# The integrated impl (after the last gate), with the same saturating accumulator.
import torch


def knob_mlp_wrapper(x, w, mask, alpha):
    return torch.clamp(x @ w, -100.0, 100.0) * alpha * mask[:, None].to(torch.float32)
