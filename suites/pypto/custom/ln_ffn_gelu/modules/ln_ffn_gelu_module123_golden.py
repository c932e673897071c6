# Cumulative golden for modules 1..3 of ln_ffn_gelu (layernorm -> up_proj -> gelu_tanh).
# Derived from module_interfaces.yaml; pure torch, no PyPTO. Do not hand-edit.
import math

import torch

EPS = 1e-5


def ln_ffn_gelu_module123_golden(x, gamma, beta, w_up, b_up):
    """Primary inputs in contract order -> y [M, F]."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    xn = (x - mean) * torch.rsqrt(var + EPS) * gamma + beta
    h = xn @ w_up + b_up
    return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h ** 3)))
