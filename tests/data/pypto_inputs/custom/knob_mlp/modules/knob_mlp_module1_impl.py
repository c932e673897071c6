# Staged impl of module 1: the accumulator saturates at +-100 (a bug that only large
# inputs, scale_A, expose).
import torch


def knob_mlp_module1_wrapper(x, w, mask, alpha):
    return torch.clamp(x @ w, -100.0, 100.0) * alpha
