import torch


def knob_mlp_golden(x, w, mask, alpha):
    return (x @ w) * alpha * mask[:, None].to(torch.float32)
