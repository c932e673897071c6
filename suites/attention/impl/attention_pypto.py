"""attention_pypto.py — the bundled attention op as a pypto-workflow impl module: one
function per phase, `attention_module<suffix>_wrapper(q, k, v)`, taking the primary
inputs as torch tensors and returning the boundary outputs. No phasegate import, no
request, no files: phasegate's `python:` adapter calls it in its persistent Python
worker, with the tensors already on the mode's device (cpu/sim: CPU, cuda: cuda:<id>).

    phasegate run --op-dir suites/attention --up-to-module 3 --modes sim,cuda \
        --impl python:suites/attention/impl/attention_pypto.py

Same arithmetic as attention_torch.py: inputs widened to fp32, fp32 matmuls (TF32 off),
the probabilities and the output stored in the inputs' dtype (fp16, or fp32 in the
suite's fp32 case) before M3, as the golden composes them.
"""
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def _scores(q, k):
    q, k = q.float(), k.float()
    return torch.matmul(q, k.transpose(-1, -2)) * (1.0 / float(q.shape[-1]) ** 0.5)


def _probs(scores, dtype):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return (e / e.sum(dim=-1, keepdim=True)).to(dtype)


def attention_module1_wrapper(q, k, v):
    return _scores(q, k)


def attention_module12_wrapper(q, k, v):
    return _probs(_scores(q, k), q.dtype)


def attention_module123_wrapper(q, k, v):
    return torch.matmul(_probs(_scores(q, k), q.dtype).float(), v.float()).to(v.dtype)
