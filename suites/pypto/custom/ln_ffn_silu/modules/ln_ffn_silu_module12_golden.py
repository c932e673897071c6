# Cumulative golden for modules 1..2 of ln_ffn_silu (layernorm -> up_proj).
# Derived from module_interfaces.yaml; pure torch, no PyPTO. Do not hand-edit.
import torch

EPS = 1e-5


def ln_ffn_silu_module12_golden(x, gamma, beta, w_up, b_up):
    """Primary inputs in contract order -> h [M, F]."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    xn = (x - mean) * torch.rsqrt(var + EPS) * gamma + beta
    return xn @ w_up + b_up
