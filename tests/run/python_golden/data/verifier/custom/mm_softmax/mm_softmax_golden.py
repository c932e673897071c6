"""Op-level golden (verifier workflow): the whole op in one function, written
independently of the module goldens (composition verification compares them)."""
import torch


def mm_softmax_golden(x, w, g):
    logits = x.double() @ w.double()
    e = torch.exp(logits - logits.max(dim=-1, keepdim=True).values)
    return ((e / e.sum(dim=-1, keepdim=True)) * g.double()).to(torch.float16)
