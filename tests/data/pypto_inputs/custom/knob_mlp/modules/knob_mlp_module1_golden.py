import torch


def knob_mlp_module1_golden(x, w, mask, alpha):
    assert isinstance(alpha, float), "alpha must arrive as a Python float"
    return (x @ w) * alpha
