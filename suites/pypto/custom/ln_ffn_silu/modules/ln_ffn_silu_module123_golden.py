# Cumulative golden for modules 1..3 of ln_ffn_silu (layernorm -> up_proj -> silu).
# Derived from module_interfaces.yaml; pure torch, no PyPTO. Do not hand-edit.
import torch

EPS = 1e-5


def ln_ffn_silu_module123_golden(x, gamma, beta, w_up, b_up):
    """Primary inputs in contract order -> y [M, F]."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    xn = (x - mean) * torch.rsqrt(var + EPS) * gamma + beta
    h = xn @ w_up + b_up
    return h * torch.sigmoid(h)
