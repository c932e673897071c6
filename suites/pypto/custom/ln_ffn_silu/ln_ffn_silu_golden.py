# User-provided golden for ln_ffn_silu: the whole op in torch (the oracle that the
# modular goldens compose back to, composition_verification in module_interfaces.yaml).
import torch
import torch.nn.functional as F


def ln_ffn_silu_golden(x, gamma, beta, w_up, b_up):
    """x [M, H], gamma [H], beta [H], w_up [H, F], b_up [F] -> y [M, F] (float32)."""
    xn = F.layer_norm(x, (x.shape[-1],), gamma, beta, eps=1e-5)
    h = F.linear(xn, w_up.t(), b_up)
    return F.silu(h)
