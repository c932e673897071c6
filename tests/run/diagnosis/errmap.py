"""The error map and |golden| histogram of a failing tensor (docs/diagnosis.md "The error
map"), end to end: a [3, 50, 150] float32 output (rows folded to 150, 3 per cell; 3
columns per cell) with a planted bug of known geometry, the report's error_map and
error_histogram checked against numpy computing the same from the saved golden and the
impl's own output (differential), and the cells lit exactly where the bug is.

  tile   one tile y[1, 20:30, 100:130] and one row y[2, 7, :] off by 0.5
  edge   the last partial tile of 32 along the last axis (columns 128..149) off by 1000,
         on a constant input of 98765.4321 (golden 197530.86): the barrier check — no
         number in error_map, error_histogram or a hint's axis / tile is (close to) an
         input or golden value — and the tile_edge hint's geometry (axis 2, tile 32).

Usage: errmap.py --phasegate EXE --tmp DIR --python PY --tools DIR"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


CONTRACT = """schema_version: 1
op: em
module_count: 1
is_fusion: false
has_cross_core: false
dims: {B: 3, M: 50, N: 150}
primary_inputs:
  - {name: x, shape: [B, M, N], dtype: float32, fill: normal(0, 1)}
modules:
  - id: 1
    name: dbl
    section: vector
    inputs: [{name: x, source: primary}]
    outputs: [{name: y, shape: [B, M, N], dtype: float32}]
    golden:
      - y = scale(x, factor=2)
final_outputs:
  - {name: y, source: module_1}
tolerance: {atol: 1e-3, rtol: 1e-3}
"""

IMPL = """import sys
import numpy as np
sys.path.insert(0, sys.argv[3])
from pg_exec_helper import load_request
req = load_request()
x = req.input("x", np.float32)
y = (x * np.float32(2)).astype(np.float32)
if sys.argv[1] == "tile":
    y[1, 20:30, 100:130] += np.float32(0.5)
    y[2, 7, :] += np.float32(0.5)
else:
    y[:, :, 128:] += np.float32(1000)
np.save(sys.argv[2], y)
req.write_output("y", y)
"""

LO = [0.0] + [10.0 ** e for e in range(-6, 7)]  # bucket i: [LO[i], LO[i+1]), last to inf


def sig3(v):
    return float("%.3g" % v)


def numpy_map(a, b, atol, rtol):
    """The error map and histogram as docs/compare.md defines them, in numpy."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    d = np.abs(a - b)
    tol = atol + rtol * np.abs(b)
    bad = ~(d <= tol)
    err = d / tol
    R = int(np.prod(b.shape[:-1])) if b.ndim >= 2 else 1
    C = b.shape[-1] if b.ndim >= 1 else 1
    rpc, cpc = -(-R // 64), -(-C // 64)
    rows, cols = -(-R // rpc), -(-C // cpc)
    e2, m2 = err.reshape(R, C), bad.reshape(R, C)
    cells = np.zeros((rows, cols))
    mis = np.zeros((rows, cols), np.int64)
    for r in range(rows):
        for c in range(cols):
            blk = (slice(r * rpc, (r + 1) * rpc), slice(c * cpc, (c + 1) * cpc))
            cells[r, c] = e2[blk].max()
            mis[r, c] = m2[blk].sum()
    ab = np.abs(b).ravel()
    bk = np.searchsorted(np.array(LO[1:]), ab, side="right")
    buckets = []
    for i in range(14):
        sel = bk == i
        if not sel.any():
            continue
        buckets.append({"golden_abs_lo": LO[i], "golden_abs_hi": LO[i + 1] if i < 13 else None,
                        "n": int(sel.sum()), "mismatches": int(bad.ravel()[sel].sum()),
                        "max_abs_diff": float(d.ravel()[sel].max()),
                        "max_err_over_tol": float(err.ravel()[sel].max())})
    return {"shape": [rows, cols], "rows_per_cell": rpc, "cols_per_cell": cpc,
            "rows_total": R, "cols_total": C, "cells": cells, "mismatch_cells": mis}, buckets


def close3(got, want):
    return got == sig3(want) or abs(got - want) <= 5e-3 * abs(want)


def run(a, op, fault, suite):
    tag = f"em_{fault}"
    with open(os.path.join(op, "adversarial_suite.json"), "w") as f:
        json.dump(suite, f)
    impl = os.path.join(a.tmp, "em_impl.py")
    dump = os.path.join(a.tmp, f"{tag}_impl.npy")
    save = os.path.join(a.tmp, f"{tag}_data")
    report = os.path.join(a.tmp, f"{tag}.json")
    shutil.rmtree(save, ignore_errors=True)
    cmd = [a.phasegate, "run", "--op-dir", op, "--up-to-module", "1", "--impl",
           f"exec:{a.python} {impl} {fault} {dump} {a.tools}", "--report", report,
           "--no-golden-cache", "--no-bisect", "--save-data", save]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    print(f"$ {' '.join(cmd)}\n-> {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    check(r.returncode == 1, f"{fault}: FAIL (exit {r.returncode})")
    rep = json.load(open(report))
    case = suite["cases"][0]["id"]
    golden = np.load(os.path.join(save, case, "out", "y.npy"))
    return rep, np.load(dump), golden, np.load(os.path.join(save, case, "in", "x.npy"))


def differential(fault, t, impl, golden):
    em, hist = t.get("error_map"), t.get("error_histogram")
    check(em is not None and hist is not None, f"{fault}: error_map and error_histogram present")
    if em is None or hist is None:
        return None
    want, buckets = numpy_map(impl, golden, t["atol"], t["rtol"])
    check(em["row_axes"] == [0, 1] and em["col_axis"] == 2, f"{fault}: rows fold axes 0, 1 ({em['row_axes']}, {em['col_axis']})")
    check(em["metric"] == "max_err_over_tol", f"{fault}: metric")
    for k in ("shape", "rows_per_cell", "cols_per_cell", "rows_total", "cols_total"):
        check(em[k] == want[k], f"{fault}: {k} {em[k]} == numpy {want[k]}")
    cells = np.array(em["cells"], np.float64)
    mis = np.array(em["mismatch_cells"], np.int64)
    check(cells.shape == want["cells"].shape, f"{fault}: cells {cells.shape}")
    if cells.shape == want["cells"].shape:
        ok = np.vectorize(close3)(cells, want["cells"])
        check(bool(ok.all()), f"{fault}: every cell == numpy's, 3 significant digits "
                              f"({np.argwhere(~ok)[:5].tolist()})")
        check(bool((mis == want["mismatch_cells"]).all()), f"{fault}: mismatch counts == numpy's")
    got = hist["buckets"]
    check(len(got) == len(buckets), f"{fault}: {len(got)} non-empty buckets, numpy {len(buckets)}")
    for g, w in zip(got, buckets):
        same = (g["golden_abs_lo"] == w["golden_abs_lo"] and g["golden_abs_hi"] == w["golden_abs_hi"]
                and g["n"] == w["n"] and g["mismatches"] == w["mismatches"]
                and close3(g["max_abs_diff"], w["max_abs_diff"])
                and close3(g["max_err_over_tol"], w["max_err_over_tol"]))
        check(same, f"{fault}: bucket {g} == numpy {w}")
    return mis


def numbers(node):
    if isinstance(node, dict):
        for v in node.values():
            yield from numbers(v)
    elif isinstance(node, list):
        for v in node:
            yield from numbers(v)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield float(node)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--phasegate", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--tools", required=True, help="the source tools/ dir (pg_exec_helper)")
    a = ap.parse_args()
    os.makedirs(a.tmp, exist_ok=True)
    op = os.path.join(a.tmp, "em_op")
    os.makedirs(op, exist_ok=True)
    with open(os.path.join(op, "module_interfaces.yaml"), "w") as f:
        f.write(CONTRACT)
    with open(os.path.join(a.tmp, "em_impl.py"), "w") as f:
        f.write(IMPL)

    # tile: the cells lit are exactly the tile's and the row's
    rep, impl, golden, _ = run(a, op, "tile", {"op": "em", "total_modules": 1,
                                               "cases": [{"id": "L2_tile", "level": 2, "seed": 5}]})
    t = rep["checks"][0]["per_tensor"][0]
    mis = differential("tile", t, impl, golden)
    if mis is not None:
        lit = np.zeros_like(mis, bool)
        lit[23:27, 33:44] = True  # folded rows 70..79, columns 100..129
        lit[35, :] = True         # folded row 107
        check(bool(((mis > 0) == lit).all()), f"tile: cells lit exactly at the tile and the row "
                                              f"({np.argwhere((mis > 0) != lit)[:5].tolist()})")
        cells = np.array(t["error_map"]["cells"])
        check(bool((cells[~lit] <= 1).all() and (cells[lit] > 1).all()),
              "tile: cells > 1 exactly where an element mismatches")

    # edge: the barrier, with distinctive values, and the tile_edge geometry
    rep, impl, golden, x = run(a, op, "edge", {
        "op": "em", "total_modules": 1,
        "cases": [{"id": "L2_edge", "level": 2, "seed": 5, "fill": {"x": "const(98765.4321)"}}]})
    t = rep["checks"][0]["per_tensor"][0]
    mis = differential("edge", t, impl, golden)
    if mis is not None:
        check(bool(((mis > 0) == (np.arange(50) >= 42)[None, :]).all()),
              "edge: the cells of columns 128..149 (cell columns 42..49) lit, no other")
    hints = t.get("hints", [])
    edge = [h for h in hints if h["kind"] == "tile_edge"]
    check(edge and edge[0].get("axis") == 2 and edge[0].get("tile") == 32,
          f"edge: tile_edge names axis 2, tile 32 ({edge})")
    values = sorted({float(v) for v in np.abs(x).ravel()} | {float(v) for v in np.abs(golden).ravel()})
    check(values and min(values) > 9e4, f"edge: distinctive values {values[:3]}")
    keys = {"error_map": t.get("error_map"), "error_histogram": t.get("error_histogram"),
            "hint_geometry": [{k: h[k] for k in ("axis", "tile") if k in h} for h in hints]}
    leaks = [v for v in numbers(keys) for w in values if abs(abs(v) - w) <= 1e-2 * w]
    check(not leaks, f"barrier: no input or golden value in error_map, error_histogram, hint "
                     f"axis / tile ({leaks[:5]})")
    text = json.dumps(keys)
    for s in ("98765", "9.88e", "98800", "197530", "197531", "1.98e", "197500", "198000"):
        check(s not in text, f"barrier: '{s}' not in the new keys")
    print("FAILED: " + "; ".join(failures) if failures else "all ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
