import torch


def knob_mlp_module12_golden(x, w, mask, alpha):
    assert isinstance(alpha, float), "alpha must arrive as a Python float"
    assert mask.dtype == torch.int32
    return (x @ w) * alpha * mask[:, None].to(torch.float32)
