"""bench_persist_peer.py — the peer of bench_persist.sh's worker run: ONE Python process
that imports torch once and, per case, loads the case's inputs (.npy written by
`phasegate gen`), computes the attention impl (the same torch code as
suites/attention/impl/attention_torch.py) and a float64 reference, and checks
allclose — what a hand-written torch test loop does, with no phasegate in it.

    python3 bench_persist_peer.py INPUT_ROOT CASE_ID...   (INPUT_ROOT/<case>/q.npy …)
Prints one line: cases, passed (allclose at atol = rtol = 2e-3).
"""
import os
import sys

import numpy as np
import torch

torch.backends.cuda.matmul.allow_tf32 = False


def impl(q, k, v):
    q, k, v = q.float(), k.float(), v.float()
    scores = torch.matmul(q, k.transpose(-1, -2)) / float(q.shape[-1]) ** 0.5
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    probs = (e / e.sum(dim=-1, keepdim=True)).half()
    return torch.matmul(probs.float(), v).half()


def reference(q, k, v):
    q, k, v = q.double(), k.double(), v.double()
    scores = torch.matmul(q, k.transpose(-1, -2)) / float(q.shape[-1]) ** 0.5
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def main():
    root, cases = sys.argv[1], sys.argv[2:]
    passed = 0
    for case in cases:
        t = {n: torch.from_numpy(np.load(os.path.join(root, case, n + ".npy"))) for n in "qkv"}
        out = impl(t["q"], t["k"], t["v"])
        ref = reference(t["q"], t["k"], t["v"])
        passed += bool(torch.allclose(out.double(), ref, atol=2e-3, rtol=2e-3, equal_nan=True))
    print(f"peer: {len(cases)} cases, {passed} allclose")


if __name__ == "__main__":
    main()
