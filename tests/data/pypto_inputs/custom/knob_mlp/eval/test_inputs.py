# The op's own input code (pypto workflow eval/test_inputs.py): make_inputs(case) builds
# the inputs from the case's seed and knobs.
import torch

PRIMARY_INPUT_ORDER = ["x", "w", "mask", "alpha"]


def make_inputs(case):
    g = torch.Generator().manual_seed(int(case.get("seed", 0)))
    shape = case["shape"]
    m, k, n = shape["M"], shape["K"], shape["N"]
    scale = float(case.get("scale_A", 1.0))
    x = torch.randn(m, k, generator=g) * scale
    w = torch.randn(k, n, generator=g) / k ** 0.5
    mask = torch.randint(0, 2, (m,), generator=g, dtype=torch.int32)
    if case.get("cancellation_stress"):   # rows of zero mean: h's sums cancel
        x = x - x.mean(dim=1, keepdim=True)
    return {"x": x, "w": w, "mask": mask, "alpha": float(case.get("alpha", 0.25))}
