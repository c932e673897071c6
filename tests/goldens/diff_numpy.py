#!/usr/bin/env python3
"""Differential test of phasegate's reference kernels against numpy formulas.

Writes random inputs (.npy) and a manifest of kernel calls into a temp dir, runs the
C driver (kernels_npy_driver) once over the manifest, and compares every output with
a numpy formula computed in float64 from the same inputs. Tolerances are tight:
float64 results to ~1e-12 relative, float32 results to a few float32 ulps (matmul
scaled by sum |a||b|). Usage: diff_numpy.py DRIVER [WORKDIR]
"""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

RNG = np.random.default_rng(20261122)
erf = np.vectorize(math.erf)
erfc = np.vectorize(math.erfc)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def layernorm(x, w, b, axis, eps):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def rmsnorm(x, w, eps):
    y = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
    return y * w if w is not None else y


def rope(x, pos, base, interleaved):
    d = x.shape[-1]
    if pos is None:
        pos = np.arange(x.shape[-2], dtype=np.float64)
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    th = pos.astype(np.float64)[..., None] * inv          # [..., S, D/2]
    c, s = np.cos(th), np.sin(th)
    if interleaved:
        x0, x1 = x[..., 0::2], x[..., 1::2]
        y = np.empty_like(x)
        y[..., 0::2] = x0 * c - x1 * s
        y[..., 1::2] = x1 * c + x0 * s
        return y
    h = d // 2
    x0, x1 = x[..., :h], x[..., h:]
    return np.concatenate([x0 * c - x1 * s, x1 * c + x0 * s], axis=-1)


def causal(x, offset, fill):
    r, c = x.shape[-2], x.shape[-1]
    mask = np.arange(c)[None, :] > np.arange(r)[:, None] + offset
    return np.where(mask, fill, x)


class Suite:
    def __init__(self, work, dtype):
        self.work, self.dtype, self.cases, self.n = work, dtype, [], 0

    def arr(self, shape, lo=-2.0, hi=2.0, dtype=None):
        a = RNG.uniform(lo, hi, size=shape).astype(dtype or self.dtype)
        path = os.path.join(self.work, f"in_{self.dtype.__name__}_{self.n}.npy")
        self.n += 1
        np.save(path, a)
        return a, path

    def add(self, name, op, attrs, inputs, ref, scale=None):
        """inputs: list of (array, path); ref: float64 numpy result."""
        out = os.path.join(self.work, f"out_{self.dtype.__name__}_{len(self.cases)}.npy")
        self.cases.append((name, op, attrs, [p for _, p in inputs], out, ref, scale))

    def manifest_lines(self):
        for name, op, attrs, ins, out, _, _ in self.cases:
            a = ";".join(f"{k}={v}" for k, v in attrs.items()) or "-"
            yield f"{op}\t{a}\t{','.join(ins)}\t{out}\n"


def build(s):
    f64 = lambda a: a.astype(np.float64)
    # matmul: broadcast batch, transposes, 1-D, alpha/beta with c
    a, b = s.arr((2, 1, 17, 33)), s.arr((3, 33, 9))
    s.add("matmul_bcast", "matmul", {}, [a, b], f64(a[0]) @ f64(b[0]),
          np.abs(f64(a[0])) @ np.abs(f64(b[0])))
    a, b = s.arr((4, 13, 8)), s.arr((4, 11, 8))
    r = 0.125 * f64(a[0]) @ np.swapaxes(f64(b[0]), -1, -2)
    s.add("matmul_tb_alpha", "matmul", {"trans_b": "true", "alpha": 0.125}, [a, b], r,
          0.125 * np.abs(f64(a[0])) @ np.swapaxes(np.abs(f64(b[0])), -1, -2))
    a, b = s.arr((3, 13, 8)), s.arr((13, 5))
    s.add("matmul_ta", "matmul", {"trans_a": "true"}, [a, b],
          np.swapaxes(f64(a[0]), -1, -2) @ f64(b[0]),
          np.swapaxes(np.abs(f64(a[0])), -1, -2) @ np.abs(f64(b[0])))
    a, b = s.arr((33,)), s.arr((2, 33, 5))
    s.add("matmul_1d", "matmul", {}, [a, b], f64(a[0]) @ f64(b[0]),
          np.abs(f64(a[0])) @ np.abs(f64(b[0])))
    a, b, c = s.arr((5, 7)), s.arr((7, 3)), s.arr((3,))
    s.add("matmul_beta_c", "matmul", {"alpha": 2.0, "beta": 0.5}, [a, b, c],
          2.0 * f64(a[0]) @ f64(b[0]) + 0.5 * f64(c[0]),
          2.0 * np.abs(f64(a[0])) @ np.abs(f64(b[0])) + 0.5 * np.abs(f64(c[0])))
    # softmax family, several axes, offset logits
    x = s.arr((3, 7, 11), 20.0, 30.0)
    for ax in (-1, 1, 0):
        s.add(f"softmax_ax{ax}", "softmax", {"axis": ax}, [x], softmax(f64(x[0]), ax))
        s.add(f"log_softmax_ax{ax}", "log_softmax", {"axis": ax}, [x], log_softmax(f64(x[0]), ax))
    # norms
    x, w, bb = s.arr((4, 6, 50), 5.0, 6.0), s.arr((50,)), s.arr((50,))
    s.add("layernorm", "layernorm", {}, [x, w, bb], layernorm(f64(x[0]), f64(w[0]), f64(bb[0]), -1, 1e-5))
    w2 = s.arr((6, 50))
    s.add("layernorm_ax-2", "layernorm", {"axis": -2, "eps": 1e-3}, [x, w2],
          layernorm(f64(x[0]), f64(w2[0]), None, -2, 1e-3))
    s.add("rmsnorm", "rmsnorm", {}, [x, w], rmsnorm(f64(x[0]), f64(w[0]), 1e-6))
    s.add("rmsnorm_now", "rmsnorm", {"eps": 0.01}, [x], rmsnorm(f64(x[0]), None, 0.01))
    x = s.arr((5, 9))
    nrm = np.maximum(np.linalg.norm(f64(x[0]), axis=-1, keepdims=True), 1e-12)
    s.add("l2norm", "l2norm", {}, [x], f64(x[0]) / nrm)
    # unary
    x = s.arr((7, 31), -6.0, 6.0)
    xd = f64(x[0])
    # x*Phi(x): erfc form (exact in both tails) and the textbook erf form (cancels
    # for x << 0, so it is compared relative to |x|)
    s.add("gelu", "gelu", {}, [x], 0.5 * xd * erfc(-xd / math.sqrt(2)))
    s.add("gelu_erf_form", "gelu", {}, [x], 0.5 * xd * (1 + erf(xd / math.sqrt(2))),
          0.5 * np.abs(xd))
    # 0.5*(1 + tanh(y)) == 1/(1 + exp(-2y)); the latter does not cancel for x << 0
    y = math.sqrt(2 / math.pi) * (xd + 0.044715 * xd ** 3)
    s.add("gelu_tanh", "gelu", {"approximate": "tanh"}, [x], xd / (1 + np.exp(-2 * y)))
    s.add("gelu_tanh_torch_form", "gelu", {"approximate": "tanh"}, [x],
          0.5 * xd * (1 + np.tanh(y)), 0.5 * np.abs(xd))
    s.add("silu", "silu", {}, [x], xd / (1 + np.exp(-xd)))
    s.add("sigmoid", "sigmoid", {}, [x], 1 / (1 + np.exp(-xd)))
    for op, fn in (("tanh", np.tanh), ("exp", np.exp), ("relu", lambda v: np.maximum(v, 0)),
                   ("abs", np.abs), ("neg", np.negative)):
        s.add(op, op, {}, [x], fn(xd))
    s.add("scale", "scale", {"factor": 0.3}, [x], xd * 0.3)
    s.add("identity", "identity", {}, [x], xd)
    s.add("cast_f16", "cast", {"dtype": "float16"}, [x], xd.astype(np.float16).astype(np.float64))
    p = s.arr((7, 31), 0.01, 40.0)
    pd = f64(p[0])
    for op, fn in (("log", np.log), ("sqrt", np.sqrt), ("rsqrt", lambda v: 1 / np.sqrt(v))):
        s.add(op, op, {}, [p], fn(pd))
    # binary broadcasting
    a, b = s.arr((1, 3, 1)), s.arr((5, 1, 7), 0.5, 2.0)
    for op, fn in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("div", np.divide), ("maximum", np.maximum), ("minimum", np.minimum)):
        # numpy in the tensor dtype: binary ops are bit-exact with it
        s.add(op, op, {}, [a, b], fn(a[0], b[0]).astype(np.float64))
    # layout
    x = s.arr((2, 3, 5, 7))
    s.add("transpose", "transpose", {}, [x], np.swapaxes(f64(x[0]), -1, -2))
    s.add("permute", "permute", {"perm": "2,0,3,1"}, [x], np.transpose(f64(x[0]), (2, 0, 3, 1)))
    s.add("reshape", "reshape", {"shape": "-1,7"}, [x], f64(x[0]).reshape(-1, 7))
    # reductions
    for op, fn in (("sum", np.sum), ("mean", np.mean), ("max", np.max)):
        s.add(f"{op}_ax1", op, {"axis": 1}, [x], fn(f64(x[0]), axis=1))
        s.add(f"{op}_keep", op, {"axis": -1, "keepdims": "true"}, [x],
              fn(f64(x[0]), axis=-1, keepdims=True))
    s.add("cumsum", "cumsum", {"axis": 0}, [x], np.cumsum(f64(x[0]), axis=0))
    # masks and rope
    x = s.arr((2, 6, 9))
    s.add("causal", "causal_mask", {}, [x], causal(f64(x[0]), 0, -np.inf))
    s.add("causal_off", "causal_mask", {"offset": 2, "fill": -1e4}, [x], causal(f64(x[0]), 2, -1e4))
    x = s.arr((2, 3, 6, 16))
    s.add("rope", "rope", {}, [x], rope(f64(x[0]), None, 10000.0, False))
    s.add("rope_inter", "rope", {"interleaved": "true", "base": 500}, [x],
          rope(f64(x[0]), None, 500.0, True))
    pos = s.arr((6,), 0, 1, dtype=np.int64)
    pos[0][:] = np.arange(6) * 11 + 3
    np.save(pos[1], pos[0])
    s.add("rope_pos", "rope", {}, [x, pos], rope(f64(x[0]), pos[0], 10000.0, False))


def main():
    driver = sys.argv[1]
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="pg_kernels_np_")
    os.makedirs(work, exist_ok=True)
    suites = [Suite(work, np.float32), Suite(work, np.float64)]
    for s in suites:
        build(s)
    manifest = os.path.join(work, "manifest.tsv")
    with open(manifest, "w") as f:
        for s in suites:
            f.writelines(s.manifest_lines())
    r = subprocess.run([driver, manifest], capture_output=True, text=True)
    if r.returncode != 0:
        print("driver failed:\n" + r.stderr)
        return 1
    failures = 0
    for s in suites:
        f32 = s.dtype == np.float32
        for name, op, attrs, ins, out, ref, scale in s.cases:
            got = np.load(out)
            tag = f"{s.dtype.__name__} {name}"
            if got.shape != ref.shape or got.dtype != s.dtype:
                print(f"FAIL {tag}: got {got.dtype}{got.shape}, expected {s.dtype.__name__}{ref.shape}")
                failures += 1
                continue
            g = got.astype(np.float64)
            if scale is None:
                scale = np.abs(ref)
            rtol = 4e-6 if f32 else 1e-12
            atol = 1e-6 if f32 else 1e-13
            if op == "cast" or op in ("add", "sub", "mul", "div", "maximum", "minimum",
                                      "transpose", "permute", "reshape", "identity", "neg",
                                      "abs", "relu", "causal_mask"):
                rtol, atol = 0.0, 0.0  # exact
            with np.errstate(invalid="ignore"):
                bad = ~((np.abs(g - ref) <= atol + rtol * scale) | (np.isinf(ref) & (g == ref)))
            if bad.any():
                i = np.unravel_index(np.argmax(bad), bad.shape)
                print(f"FAIL {tag}: {int(bad.sum())} elements, first at {i}: got {g[i]!r}, "
                      f"numpy {ref[i]!r}")
                failures += 1
            else:
                fin = np.isfinite(ref)
                err = (np.max(np.abs(g[fin] - ref[fin]) / (scale[fin] + 1e-300))
                       if fin.any() else 0.0)
                print(f"ok   {tag}: max scaled err {err:.2e}")
    print(f"{failures} failure(s) in {sum(len(s.cases) for s in suites)} comparisons")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
