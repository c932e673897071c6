# The integrated impl of ln_ffn_silu (after the last gate): layernorm -> up_proj -> silu
# fused per row tile, the staged set 123 made whole. Exports ln_ffn_silu_wrapper, which
# the end-to-end check (`phasegate run --e2e`, the CTest test ln_ffn_silu/e2e) compares
# with ln_ffn_silu_golden on every final output.
import torch

ROW_TILE = 16
K_TILE = 64
EPS = 1e-5


def _layernorm_tile(xt, gamma, beta):
    h = xt.shape[-1]
    mean = xt.sum(dim=1, keepdim=True) / h
    centred = xt - mean
    var = (centred * centred).sum(dim=1, keepdim=True) / h
    return centred * (1.0 / torch.sqrt(var + EPS)) * gamma + beta


def _up_proj_tile(xn, w_up, b_up):
    acc = b_up.expand(xn.shape[0], -1).clone()
    for k0 in range(0, xn.shape[1], K_TILE):
        k1 = min(k0 + K_TILE, xn.shape[1])
        acc += xn[:, k0:k1] @ w_up[k0:k1]
    return acc


def _silu_(acc):
    return acc.mul_(0.5 * (1.0 + torch.tanh(0.5 * acc)))


def ln_ffn_silu_wrapper(x, gamma, beta, w_up, b_up):
    m = x.shape[0]
    y = torch.empty(m, w_up.shape[1], dtype=x.dtype, device=x.device)
    for r0 in range(0, m, ROW_TILE):
        r1 = min(r0 + ROW_TILE, m)
        xn = _layernorm_tile(x[r0:r1], gamma, beta)
        y[r0:r1] = _silu_(_up_proj_tile(xn, w_up, b_up))
    return y
