#!/usr/bin/python3
"""Differential test of compare/ against numpy (tests/compare/CMakeLists.txt).

Generates a few thousand random and edge-case tensor pairs (NaN, +-Inf, -0,
denormals, zeros in the reference, huge and tiny magnitudes; float16, bfloat16,
float32, float64; sizes crossing the kernel's block and chunk boundaries), writes
them as .npy (bfloat16 as raw '<u2' bit patterns: the batch list names the dtype),
runs pg_cmp_driver once over all of them, and asserts that verdict, mismatch count,
first mismatches, NaN/Inf/zero counts, max ULP and shares are equal to the numpy
expressions in docs/compare.md, and max abs/rel diff (and their indices) to the
last bit. Sums (mean abs, RMSE, cosine) are compared to 1e-12 relative: numpy sums
in a different order.

usage: diff_numpy.py PATH/TO/pg_cmp_driver [--seed S] [--pairs N]
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

DTYPES = ["float16", "bfloat16", "float32", "float64"]


def to_bf16_bits(x32):
    """float32 -> bfloat16 bit patterns, round to nearest even, NaN kept quiet."""
    bits = x32.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x32)
    rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded


def widen(arr, dtype):
    if dtype == "bfloat16":
        return (arr.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return arr.astype(np.float64)


def cast(x64, dtype):
    if dtype == "bfloat16":
        return to_bf16_bits(x64.astype(np.float32))
    with np.errstate(over="ignore"):
        return x64.astype(dtype)


def ulp_dist(a_raw, b_raw, dtype):
    """|ordered(a) - ordered(b)| per element (Python ints for float64: may exceed int64)."""
    oa, ob = ordered(a_raw.ravel(), dtype), ordered(b_raw.ravel(), dtype)
    if dtype == "float64":
        return np.array([abs(int(x) - int(y)) for x, y in zip(oa, ob)], dtype=object)
    return np.abs(oa - ob)


def ordered(arr, dtype):
    """Bit patterns as ordered integers: +0 and -0 -> 0, neighbours differ by 1."""
    if dtype in ("float16", "bfloat16"):
        bits = arr.view(np.uint16).astype(np.int64)
        mag, neg = bits & 0x7FFF, (bits >> 15) & 1
    elif dtype == "float32":
        bits = arr.view(np.uint32).astype(np.int64)
        mag, neg = bits & 0x7FFFFFFF, (bits >> 31) & 1
    else:
        bits = arr.view(np.uint64)
        mag, neg = (bits & np.uint64(0x7FFFFFFFFFFFFFFF)).astype(object), (bits >> np.uint64(63)).astype(np.int64)
        return np.where(neg == 1, -mag, mag)
    return np.where(neg == 1, -mag, mag)


SPECIALS = {
    "float16": [np.nan, np.inf, -np.inf, -0.0, 0.0, 6e-8, -6e-8, 3e-5, 65504.0, -65504.0, 1e-4],
    "bfloat16": [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, -1e-40, 3e38, -3e38, 1e-30],
    "float32": [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45, -1e-45, 1e-40, 3.4e38, -3.4e38, 1e-30],
    "float64": [np.nan, np.inf, -np.inf, -0.0, 0.0, 5e-324, -5e-324, 1e-310, 1.7e308, -1.7e308, 1e-300],
}


def make_pair(rng, dtype, atol, rtol):
    kind = rng.integers(0, 9)
    n = int(rng.choice([1, 3, 4, 5, 17, 100, 1023, 1024, 1025, 4099]))
    if rng.random() < 0.02:
        n = int(rng.choice([65537, 140000]))
    scale = 10.0 ** rng.integers(-6, 7) if dtype != "float16" else 10.0 ** rng.integers(-4, 4)
    b = rng.standard_normal(n) * scale
    if kind == 1:  # many zeros in the reference
        b[rng.random(n) < 0.4] = 0.0
    if kind == 2:  # integers: lots of exact ties
        b = np.round(rng.standard_normal(n) * 4)
    rel = 10.0 ** rng.integers(-8, 0)
    a = b * (1 + rng.standard_normal(n) * rel) + rng.standard_normal(n) * rel * scale * (rng.random() < 0.5)
    if kind == 3:  # identical
        a = b.copy()
    if kind in (4, 5, 6):  # special values on either side
        sp = SPECIALS[dtype]
        for arr in (a, b):
            m = rng.random(n) < 0.2
            arr[m] = rng.choice(sp, size=int(m.sum()))
    if kind == 6:  # the same specials in the same cells (NaN pairs, equal infinities)
        m = rng.random(n) < 0.3
        a[m] = b[m]
    if kind == 7:  # huge and tiny magnitudes mixed
        mag = 10.0 ** rng.uniform(-300 if dtype == "float64" else -38, 300 if dtype == "float64" else 38, n)
        if dtype == "float16":
            mag = 10.0 ** rng.uniform(-7, 4.8, n)
        b = np.sign(rng.standard_normal(n)) * mag
        a = b * (1 + rng.standard_normal(n) * rel)
    if kind == 8:  # on the tolerance boundary, +-1 ulp (exact in float64 only)
        tol = atol + rtol * np.abs(b)
        a = b + np.sign(rng.standard_normal(n)) * tol
        nudge = rng.integers(-1, 2, n)
        a = np.where(nudge > 0, np.nextafter(a, np.inf), np.where(nudge < 0, np.nextafter(a, -np.inf), a))
    shape = (n,)
    if n % 5 == 0 and n > 5:
        shape = (5, n // 5)
    return cast(a, dtype).reshape(shape), cast(b, dtype).reshape(shape)


def pick_rule(rng):
    k = rng.integers(0, 6)
    atol = float(rng.choice([0.0, 1e-8, 1e-5, 1e-3, 0.1]))
    rtol = float(rng.choice([0.0, 1e-7, 1.3e-6, 1e-3, 1.6e-2, 0.5]))
    eqn = int(rng.integers(0, 2))
    if k <= 2:
        return "allclose", atol, rtol, eqn
    if k == 3:
        return "exact", atol, rtol, eqn
    if k == 4:
        return "ulp:%d" % rng.choice([0, 1, 2, 16, 1000]), atol, rtol, eqn
    return "ratio:%g" % rng.choice([0.0, 0.01, 0.1, 0.5]), atol, rtol, eqn


def expect(a_raw, b_raw, dtype, rule, atol, rtol, eqn):
    a, b = widen(a_raw, dtype).ravel(), widen(b_raw, dtype).ravel()
    n = a.size
    nanpair = np.isnan(a) & np.isnan(b) & bool(eqn)
    fin = np.isfinite(a) & np.isfinite(b)
    with np.errstate(invalid="ignore", over="ignore"):
        if rule in ("allclose",) or rule.startswith("ratio:"):
            ok = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=bool(eqn))
        elif rule == "exact":
            ok = np.isclose(a, b, rtol=0.0, atol=0.0, equal_nan=bool(eqn))
        else:
            N = int(rule[4:])
            dist = ulp_dist(a_raw, b_raw, dtype)
            ok = (fin & np.array(dist <= N, dtype=bool)) | (a == b) | nanpair
        mis = ~ok
        d = np.abs(a - b)
        e = {"n": n, "mismatches": int(mis.sum()), "n_finite": int(fin.sum())}
        e["first"] = [int(i) for i in np.flatnonzero(mis)[:10]]
        if rule.startswith("ratio:"):
            e["passed"] = int(mis.sum() <= float(rule[6:]) * n)
        else:
            e["passed"] = int(mis.sum() == 0)
        if fin.any():
            idx = np.flatnonzero(fin)
            df = d[fin]
            e["max_abs"] = float(np.max(df))
            e["max_abs_flat"] = int(idx[np.argmax(df)])
            rel = df / (np.abs(b[fin]) + 1e-8)
            e["max_rel"] = float(np.max(rel))
            e["max_rel_flat"] = int(idx[np.argmax(rel)])
            e["mean_abs"] = float(np.mean(df))
            e["rmse"] = math.sqrt(float(np.mean(df * df)))
            e["max_ulp"] = float(max(ulp_dist(a_raw, b_raw, dtype)[fin]))
        else:
            e.update(max_abs=0.0, max_abs_flat=-1, max_rel=0.0, max_rel_flat=-1, max_ulp=0.0)
        e["nan_impl"], e["nan_ref"] = int(np.isnan(a).sum()), int(np.isnan(b).sum())
        e["inf_impl"], e["inf_ref"] = int(np.isinf(a).sum()), int(np.isinf(b).sum())
        e["zeros_ref"] = int((b == 0).sum())
        den = np.abs(b) + 1e-8
        e["within3"] = float(((fin & (np.where(fin, d, 0) <= 1e-3 * den)) | (a == b)).sum()) / n
        e["within53"] = float(((fin & (np.where(fin, d, 0) <= 5e-3 * den)) | (a == b)).sum()) / n
        e["balance"] = float(int((a > b).sum()) - int((a < b).sum())) / n
    return e


def same_float(x, y):
    return (math.isnan(x) and math.isnan(y)) or x == y


def main():
    driver = sys.argv[1]
    seed = 20261121
    pairs = 2500
    if "--seed" in sys.argv:
        seed = int(sys.argv[sys.argv.index("--seed") + 1])
    if "--pairs" in sys.argv:
        pairs = int(sys.argv[sys.argv.index("--pairs") + 1])
    rng = np.random.default_rng(seed)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="pg_cmp_diff_") as tmp:
        cases = []
        lines = []
        for i in range(pairs):
            dtype = DTYPES[i % 4]
            rule, atol, rtol, eqn = pick_rule(rng)
            a, b = make_pair(rng, dtype, atol, rtol)
            pa, pb = os.path.join(tmp, "a%d.npy" % i), os.path.join(tmp, "b%d.npy" % i)
            np.save(pa, a)
            np.save(pb, b)
            threads = int(rng.choice([1, 2, 3]))
            lines.append("%s %s %s %s %r %r %d %d\n" % (dtype, pa, pb, rule, atol, rtol, eqn, threads))
            cases.append((a, b, dtype, rule, atol, rtol, eqn))
        lst = os.path.join(tmp, "list.txt")
        with open(lst, "w") as f:
            f.writelines(lines)
        out = subprocess.run([driver, "batch", lst], capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr)
            print("driver failed with exit code %d" % out.returncode)
            return 1
        results = out.stdout.splitlines()
        if len(results) != len(cases):
            print("driver printed %d results for %d pairs" % (len(results), len(cases)))
            return 1
        for i, (line, case) in enumerate(zip(results, cases)):
            got = json.loads(line)
            exp = expect(*case)
            bad = []
            for k in ("n", "mismatches", "passed", "n_finite", "first", "max_abs_flat", "max_rel_flat",
                      "nan_impl", "nan_ref", "inf_impl", "inf_ref", "zeros_ref"):
                if got[k] != exp[k]:
                    bad.append((k, got[k], exp[k]))
            for k in ("max_abs", "max_rel", "max_ulp", "within3", "within53", "balance"):
                if not same_float(float.fromhex(got[k]), exp[k]):
                    bad.append((k, float.fromhex(got[k]), exp[k]))
            for k in ("mean_abs", "rmse"):
                if k in exp:
                    g = float.fromhex(got[k])
                    if not (abs(g - exp[k]) <= 1e-12 * abs(exp[k]) or same_float(g, exp[k])):
                        bad.append((k, g, exp[k]))
            if bad:
                failures += 1
                if failures <= 10:
                    print("pair %d (%s, %s atol=%r rtol=%r equal_nan=%d): %s" % (
                        i, case[2], case[3], case[4], case[5], case[6], bad))
    print("%d pairs, %d mismatching numpy" % (pairs, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
