#!/usr/bin/env python3
"""Peer for bench_run.sh: what a Python + numpy evaluation script does for one case of
attention phase 3 — generate inputs, compute the reference (M1..M3), run the impl,
compare, write evaluation_report.json atomically. Same dims and dtypes as the
phasegate run it is measured against; the impl step is numpy (no slower than the
C plugin phasegate calls)."""
import json
import os
import sys
import time

import numpy as np


def main():
    B, H, S, D = (int(x) for x in sys.argv[1:5])
    out_path = sys.argv[5]
    t0 = time.perf_counter()
    rng = np.random.Generator(np.random.Philox(1))
    q = rng.standard_normal((B, H, S, D), dtype=np.float32).astype(np.float16)
    k = rng.standard_normal((B, H, S, D), dtype=np.float32).astype(np.float16)
    v = rng.uniform(-1, 1, (B, H, S, D)).astype(np.float16)

    def reference(q, k, v):
        s = (q.astype(np.float32) @ np.swapaxes(k.astype(np.float32), -1, -2)) / np.float32(np.sqrt(D))
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        p = (e / e.sum(axis=-1, keepdims=True)).astype(np.float16)
        return (p.astype(np.float32) @ v.astype(np.float32)).astype(np.float16)

    ref = reference(q, k, v)
    impl = reference(q, k, v)  # the impl under test, same math
    a, b = impl.astype(np.float64), ref.astype(np.float64)
    diff = np.abs(a - b)
    rel = diff / (np.abs(b) + 1e-8)
    atol = rtol = 2e-3
    bad = diff > atol + rtol * np.abs(b)
    report = {
        "op_name": "attention", "up_to_module": 3, "total_modules": 3,
        "status": "FAIL" if bad.any() else "PASS",
        "checks": [{
            "id": "bench", "level": 2, "precision_checked": True,
            "all_close": not bool(bad.any()),
            "max_abs_diff": float(diff.max()), "max_rel_diff": float(rel.max()),
            "per_tensor": [{
                "name": "out", "mismatches": int(bad.sum()),
                "max_abs_index": [int(i) for i in np.unravel_index(diff.argmax(), diff.shape)],
                "mean_abs_diff": float(diff.mean()),
                "rmse": float(np.sqrt((diff ** 2).mean())),
                "cosine_similarity": float((a * b).sum() / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30)),
            }],
        }],
        "cases_total": 1, "cases_passed": 0 if bad.any() else 1,
        "duration_s": time.perf_counter() - t0,
    }
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, out_path)


if __name__ == "__main__":
    main()
