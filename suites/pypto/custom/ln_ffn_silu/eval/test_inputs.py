# Inputs of ln_ffn_silu's adversarial suite (pypto verifier workflow, eval/test_inputs.py):
# make_inputs(case) builds the primary inputs from the case's seed, shape and knobs.
#   scale_x  multiplies the token activations (LayerNorm must not care: large-magnitude
#            rows exercise the variance in fp32)
import torch

PRIMARY_INPUT_ORDER = ["x", "gamma", "beta", "w_up", "b_up"]


def make_inputs(case):
    g = torch.Generator().manual_seed(int(case.get("seed", 0)))
    shape = case["shape"]
    m, h, f = shape["M"], shape["H"], shape["F"]
    x = torch.randn(m, h, generator=g) * float(case.get("scale_x", 1.0))
    gamma = 1.0 + 0.1 * torch.randn(h, generator=g)
    beta = 0.1 * torch.randn(h, generator=g)
    w_up = torch.randn(h, f, generator=g) / h ** 0.5
    b_up = 0.1 * torch.randn(f, generator=g)
    return {"x": x, "gamma": gamma, "beta": beta, "w_up": w_up, "b_up": b_up}
