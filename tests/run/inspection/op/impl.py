"""python: impls of chunk_accum for tests/run/inspection: the probe `acc` (running sum per
iteration) is returned after the boundary output, as the contract's `inspect:` asks.

    chunk_accum_module1_wrapper   correct
    drift_wrapper                 the accumulation drifts from iteration 5 on
    no_probe_wrapper              forgets the probe (returns the boundary output only)
    chunk_accum_module12_wrapper  phase 2 (no probes there)
"""
import numpy as np


def _acc(x, drift_from=None):
    x = np.asarray(x, dtype=np.float32)
    acc = np.zeros_like(x)
    run = np.zeros(x.shape[1:], dtype=np.float32)
    for i in range(x.shape[0]):
        run = run + x[i]
        if drift_from is not None and i >= drift_from:
            run = run + np.float32(0.01)   # a bias that creeps in from iteration 5
        acc[i] = run
    return acc


def chunk_accum_module1_wrapper(x, w):
    acc = _acc(x)
    return acc[-1], acc


def drift_wrapper(x, w):
    acc = _acc(x, drift_from=5)
    return {"total": acc[-1], "inspection_acc": acc}


def no_probe_wrapper(x, w):
    return _acc(x)[-1]


def chunk_accum_module12_wrapper(x, w):
    return _acc(x)[-1] * np.asarray(w, dtype=np.float32)
