#!/usr/bin/env python3
"""bench_python_peer.py — the peer of phasegate's `python:` adapter: the same impl
function called in-process on the same tensors, no phasegate in between.

    bench_python_peer.py IMPL.py FUNCTION SAVED_DIR DEVICE [REPEAT]

SAVED_DIR is a `phasegate run --save-data` directory (SAVED_DIR/<case>/in/<name>.npy);
the inputs of each case are passed in the order of the module's signature (the contract
order phasegate uses, read from the function's parameter names). Prints one line:
`peer: N calls, median X ms per call (min Y)`, each call synchronised on DEVICE, the
first call of each case not counted (it pays allocator / kernel warm-up, which the
worker pays once per process too).
"""
import importlib.util
import inspect
import os
import statistics
import sys
import time

import numpy as np
import torch


def main():
    path, fn_name, saved, device = sys.argv[1:5]
    repeat = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    spec = importlib.util.spec_from_file_location("peer_impl", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, fn_name)
    names = list(inspect.signature(fn).parameters)
    dev = torch.device(device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    times = []
    for case in sorted(os.listdir(saved)):
        ind = os.path.join(saved, case, "in")
        if not os.path.isdir(ind):
            continue
        args = [torch.from_numpy(np.load(os.path.join(ind, n + ".npy"))).to(dev) for n in names]
        for i in range(repeat + 1):
            sync()
            t = time.perf_counter()
            out = fn(*args)
            outs = out if isinstance(out, (tuple, list)) else [out]
            for o in outs:   # what phasegate does too: the result back on the host
                o.cpu()
            sync()
            if i:
                times.append((time.perf_counter() - t) * 1e3)
    print(f"peer: {len(times)} calls, median {statistics.median(times):.3f} ms per call "
          f"(min {min(times):.3f})")


if __name__ == "__main__":
    main()
