#!/usr/bin/env python3
"""Writes a tree of hand-made evaluation_report.json files for `phasegate report`:
the shapes of real reports (docs/runner.md) with the error_map / error_histogram and
structured hint keys of docs/report.md, so the page can be tested before a run makes
them, plus text that must be escaped (a case id, captured output with markup).

    fixtures.py OUT_DIR

OUT_DIR/attention/M1 (pass), M2 (fail: tile edge, periodic, a crash), M3 (declared not
implemented yet), OUT_DIR/rmsnorm/M1 (a 1-D and a 0-D map). Standard library only.
"""
import json
import math
import os
import random
import sys

MARKUP_ID = 'L3_<b>"quoted"&amp;</b>'
MARKUP_OUT = '<script>alert("x")</script> & <img src=x onerror=alert(1)> done\n'


def metrics(n, mism, max_abs, max_rel, idx):
    return {"all_close": mism == 0, "n": n, "mismatches": mism, "mismatch_ratio": mism / n,
            "max_abs_diff": max_abs, "max_abs_index": idx, "max_rel_diff": max_rel,
            "max_rel_index": idx, "mean_abs_diff": max_abs / 20, "rmse": max_abs / 9,
            "cosine_similarity": 0.99991 if mism == 0 else 0.9802, "nan_impl": 0, "nan_ref": 0,
            "inf_impl": 0, "inf_ref": 0, "max_ulp": 3 if mism == 0 else 22356,
            "first_mismatches": [{"index": idx, "impl_value": 0.2697, "abs_diff": max_abs,
                                  "rel_diff": max_rel}] if mism else []}


def tensor(name, mode, shape, passed, mism=0, max_abs=1e-4, hints=(), emap=None, hist=None,
           dtype="float16"):
    n = math.prod(shape)
    t = {"name": name, "mode": mode, "dtype": dtype, "shape": list(shape), "rule": "allclose",
         "atol": 2e-3, "rtol": 2e-3, "values_checked": True, "passed": passed}
    t.update(metrics(n, mism, max_abs, max_abs * 50, [0] * (len(shape) - 1) + [n % 7] if shape else []))
    t["hints"] = list(hints)
    if emap:
        t["error_map"] = emap
    if hist:
        t["error_histogram"] = hist
    return t


def fold(shape, max_cells=64):
    """The map geometry the runner uses: rows = the leading axes folded row-major,
    cols = the last axis, each downsampled to at most 64 cells."""
    if not shape:
        return [], -1, 1, 1
    rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
    return list(range(len(shape) - 1)), len(shape) - 1, rows, shape[-1]


def error_map(shape, err_at):
    """err_at(row, col) -> error over tolerance of one tensor element (folded)."""
    row_axes, col_axis, rows, cols = fold(shape)
    rpc, cpc = max(1, math.ceil(rows / 64)), max(1, math.ceil(cols / 64))
    R, C = math.ceil(rows / rpc), math.ceil(cols / cpc)
    cells, mism = [], []
    for r in range(R):
        crow, mrow = [], []
        for c in range(C):
            vals = [err_at(i, j) for i in range(r * rpc, min(rows, (r + 1) * rpc))
                    for j in range(c * cpc, min(cols, (c + 1) * cpc))]
            crow.append(float("%.3g" % max(vals)))
            mrow.append(sum(v > 1 for v in vals))
        cells.append(crow)
        mism.append(mrow)
    return {"shape": [R, C], "row_axes": row_axes, "col_axis": col_axis, "rows_per_cell": rpc,
            "cols_per_cell": cpc, "rows_total": rows, "cols_total": cols,
            "metric": "max_err_over_tol", "cells": cells, "mismatch_cells": mism}


def histogram(counts):
    buckets = []
    for e, (n, m, worst) in counts.items():
        lo = 0 if e is None else 10.0 ** e
        hi = 1e-6 if e is None else (None if e == 6 else 10.0 ** (e + 1))
        buckets.append({"golden_abs_lo": lo, "golden_abs_hi": hi, "n": n, "mismatches": m,
                        "max_abs_diff": worst * 2e-3, "max_err_over_tol": worst})
    return {"buckets": buckets}


def mode(name, status, summary, category=None, out=""):
    return {"mode": name, "status": status, "failure_category": category, "precision_gating": True,
            "summary": summary, "duration_ms": 1.25, "exit_code": 0, "stdout": out}


def case(cid, level, index, status, modes, tensors, failure=None, repro=None, hints=()):
    return {"id": cid, "level": level, "suite_index": index, "status": status,
            "precision_checked": True, "all_close": status == "PASS",
            "per_mode_status": {m["mode"]: m["status"] for m in modes}, "per_tensor": tensors,
            "failure": failure, "modes": modes, "knobs": {"id": cid, "level": level},
            "repro": repro or "phasegate run --op-dir custom/attention --impl plugin:libattn.so "
                              "--up-to-module 2 --case %s" % cid,
            "hints": list(hints), "durations_ms": {"total": 12.5}}


def report(op, k, total, cases, status, extra=None):
    r = {"schema_version": 2, "tool": "phasegate", "tool_version": "0.9.0", "op_name": op,
         "impl_file": "plugin:lib%s.so" % op, "up_to_module": k, "total_modules": total,
         "suffix": "_M%d" % k, "status": status, "checks": cases,
         "cases_total": len(cases), "cases_passed": sum(c["status"] == "PASS" for c in cases),
         "per_mode_status": {"sim": status, "npu": status}, "first_failure": None,
         "stdout": "", "updated_at": "2026-11-26T05:00:0%dZ" % k}
    r.update(extra or {})
    return r


def passing_case(cid, level, index, k):
    ts = [tensor("scores", m, [2, 4, 40, 40], True) for m in ("sim", "npu")]
    return case(cid, level, index, "PASS", [mode("sim", "PASS", "ok"), mode("npu", "PASS", "ok")], ts,
                repro="phasegate run --op-dir custom/attention --impl plugin:libattn.so "
                      "--up-to-module %d --case %s" % (k, cid))


def tile_edge_case():
    rng = random.Random(7)
    shape = [2, 4, 40, 40]
    err = {}

    def at(i, j):  # rows 32..39 of axis 2 (the last partial tile of 32) are wrong
        key = (i, j)
        if key not in err:
            err[key] = rng.uniform(3, 400) if i % 40 >= 32 else rng.uniform(0.001, 0.4)
        return err[key]
    hint = {"kind": "tile_edge", "confidence": 0.9, "axis": 2, "tile": 32,
            "detail": "mismatches confined to the last partial tile (32..39) of axis 2 (tile 32)"}
    hist = histogram({None: (12, 0, 0.2), -3: (800, 40, 9.5), -2: (5000, 900, 120.0),
                      -1: (6000, 1200, 380.0), 0: (1000, 160, 400.0)})
    fail_t = tensor("scores", "sim", shape, False, mism=2560, max_abs=0.19, hints=[hint],
                    emap=error_map(shape, at), hist=hist)
    summ = ("output 'scores' at the M2 boundary: 2560 of 12800 elements outside allclose atol 2e-3 "
            "rtol 2e-3 (max_abs_diff 0.19 at [0, 0, 39, 12])")
    failure = {"failing_module_boundary": 2, "earliest_failing_boundary": 2,
               "failure_category": "precision", "divergence_fingerprint": "all_fail", "summary": summ}
    return case("L2_tail_tile", 2, 1, "FAIL",
                [mode("sim", "FAIL", summ, "precision"), mode("npu", "FAIL", summ, "precision")],
                [fail_t, tensor("scores", "npu", shape, False, mism=2560, max_abs=0.19, hints=[hint]),
                 tensor("lse", "sim", [2, 4, 40], True, dtype="float32")], failure,
                hints=["use --inspect <output> for every metric and the first mismatching indices"])


def periodic_case():
    shape = [64, 256]
    hint = {"kind": "periodic", "confidence": 0.7, "axis": 1, "tile": 16,
            "detail": "mismatches repeat every 16 along axis 1"}
    emap = error_map(shape, lambda i, j: 40.0 if j % 16 == 15 else 0.02 + (i % 8) * 0.01)
    summ = "output 'y' at the M2 boundary: 1024 of 16384 elements outside allclose"
    failure = {"failing_module_boundary": 2, "earliest_failing_boundary": 1,
               "failure_category": "precision", "divergence_fingerprint": "kernel_ok_npu_only",
               "summary": summ}
    hist = histogram({-2: (9000, 500, 40.0), -1: (7000, 524, 40.0), 6: (384, 0, 0.5)})
    return case("L4_periodic", 4, 3, "FAIL",
                [mode("sim", "PASS", "ok"), mode("npu", "FAIL", summ, "precision")],
                [tensor("y", "sim", shape, True, dtype="float32"),
                 tensor("y", "npu", shape, False, mism=1024, max_abs=0.08,
                        hints=[hint, {"kind": "shifted", "confidence": 0.3, "axis": 0,
                                      "detail": "off by one along axis 0"}], emap=emap, hist=hist,
                        dtype="float32")], failure)


def crash_case():
    summ = "the impl crashed (SIGSEGV) in mode npu"
    failure = {"failing_module_boundary": 2, "earliest_failing_boundary": None,
               "failure_category": "runtime", "divergence_fingerprint": "kernel_ok_npu_only",
               "summary": summ}
    return case(MARKUP_ID, 3, 2, "ERROR",
                [mode("sim", "PASS", "ok"), mode("npu", "ERROR", summ, "runtime", MARKUP_OUT)],
                [tensor("scores", "sim", [2, 4, 40, 40], True)], failure)


def rmsnorm_case():
    hint = {"kind": "periodic", "confidence": 0.8, "axis": 0, "tile": 512,
            "detail": "mismatches repeat every 512 along axis 0"}
    emap = error_map([4096], lambda i, j: 12.0 if j % 512 >= 480 else 0.05)
    scalar = error_map([], lambda i, j: 1e30)
    summ = "output 'y' at the M1 boundary: 256 of 4096 elements outside allclose"
    failure = {"failing_module_boundary": 1, "earliest_failing_boundary": 1,
               "failure_category": "precision", "divergence_fingerprint": "all_fail", "summary": summ}
    return case("L1_periodic_1d", 1, 0, "FAIL", [mode("sim", "FAIL", summ, "precision")],
                [tensor("y", "sim", [4096], False, mism=256, max_abs=0.03, hints=[hint], emap=emap,
                        dtype="float32"),
                 tensor("norm", "sim", [], False, mism=1, max_abs=0.5, emap=scalar,
                        hints=[{"kind": "nan_origin", "confidence": 0.6,
                                "detail": "first non-finite value at []"}], dtype="float32")],
                failure)


def main():
    out = sys.argv[1]
    m2 = [passing_case("L1_small", 1, 0, 2), tile_edge_case(), crash_case(), periodic_case()]
    ni_modes = [mode(m, "SKIPPED", "not implemented yet (PHASES 2)") for m in ("sim", "npu")]
    m3 = [dict(case(c, lvl, i, "SKIPPED", ni_modes, []), not_implemented=True)
          for i, (c, lvl) in enumerate([("L1_small", 1), ("L2_tail_tile", 2)])]
    reports = {
        "attention/M1": report("attention", 1, 3, [passing_case("L1_small", 1, 0, 1),
                                                    passing_case("L2_tail_tile", 2, 1, 1)], "PASS"),
        "attention/M2": report("attention", 2, 3, m2, "ERROR"),
        "attention/M3": report("attention", 3, 3, m3, "SKIPPED", {"not_implemented": True}),
        "rmsnorm/M1": report("rmsnorm", 1, 1, [rmsnorm_case()], "FAIL"),
    }
    for rel, r in reports.items():
        os.makedirs(os.path.join(out, rel), exist_ok=True)
        with open(os.path.join(out, rel, "evaluation_report.json"), "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
