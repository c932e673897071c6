#!/usr/bin/env python3
"""tests/tensors — differential tests against numpy (run with /usr/bin/python3).

    numpy_diff.py TOOL WORKDIR npy|dtype|safetensors|fill

TOOL is tests/tensors/tensor_tool. Each section exits 0 on success and prints what
failed otherwise. numpy is the independent side: it writes files we read, reads
files we write, and supplies float16 rounding; bfloat16 rounding is re-derived here
from the value's binade (no bit tricks shared with the C code)."""
import io
import json
import os
import struct
import subprocess
import sys

import numpy as np

TOOL, WORK, SECTION = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(WORK, exist_ok=True)
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def tool(*args):
    r = subprocess.run([TOOL, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"tensor_tool {' '.join(args)} failed: {r.stderr}")
    return r.stdout


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def samples(dtype, shape):
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(1234)
    want = np.dtype(dtype)
    dt = want.newbyteorder("=")
    if dt.kind == "f":
        x = rng.standard_normal(n).astype(dt)
        if n >= 4:
            x[:4] = [np.nan, np.inf, -0.0, -np.inf]
    elif dt.kind == "b":
        x = rng.integers(0, 2, n).astype(dt)
    else:
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
    return x.astype(want).reshape(shape)


def section_npy():
    dtypes = ["<f2", "<f4", "<f8", "|b1", "|i1", "|u1", "<i4", "<i8", "<u2",
              ">f2", ">f4", ">f8", ">i4", ">i8", ">u2"]
    shapes = [(), (0,), (3, 0), (7,), (2, 3, 4), (1, 1, 1, 1, 1, 1, 1, 5)]
    for dt in dtypes:
        for shape in shapes:
            a = samples(dt, shape)
            for version in [(1, 0), (2, 0), (3, 0)]:
                src = os.path.join(WORK, "np.npy")
                out = os.path.join(WORK, "pg.npy")
                with open(src, "wb") as f:
                    np.lib.format.write_array(f, a, version=version)
                tool("copy", src, out)
                b = np.load(out)
                # we write little-endian; '<u2' is our bfloat16 and stays '<u2'
                want = a.astype(a.dtype.newbyteorder("<")) if a.dtype.byteorder == ">" else a
                check(same_bits(want, b), f"npy {dt} {shape} v{version}: read+write changed the array "
                      f"({want.dtype} {want.shape} vs {b.dtype} {b.shape})")
                check(np.lib.format.read_magic(open(out, "rb")) == (1, 0), "we write version 1.0")
    # what we write from scratch reads back in numpy with the right dtype and shape
    for dt in ["float32", "float16", "float64", "int8", "uint8", "int32", "int64", "bool", "bfloat16"]:
        tool("fill", "arange(-3, 1)", dt, "10", "0", "x", "1", os.path.join(WORK, "ar.npy"))
        b = np.load(os.path.join(WORK, "ar.npy"))
        if dt == "bfloat16":
            check(b.dtype == np.uint16, "bfloat16 is written as <u2")
            vals = (b.astype(np.uint32) << 16).view(np.float32)
        else:
            check(b.dtype == np.dtype(dt), f"{dt}: numpy reads {b.dtype}")
            vals = b
        want = np.arange(-3, 7, dtype=np.float64)
        if dt == "uint8":
            want = np.maximum(want, 0)
        if dt == "bool":
            want = want != 0
        check(b.shape == (10,) and np.array_equal(vals.astype(np.float64), want.astype(np.float64)),
              f"{dt}: values {vals}")


def bf16_ref(x):
    """Round float64 values to bfloat16 (RNE) via binade arithmetic; returns uint16 bits."""
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros(x.shape, dtype=np.uint16)
    nan = np.isnan(x)
    a = np.abs(np.where(nan, 0.0, x))
    with np.errstate(all="ignore"):
        _, e = np.frexp(a)  # a = m * 2^e, m in [0.5, 1)
        e = np.maximum(e - 1, -126)  # binade exponent, subnormal floor
        q = np.ldexp(1.0, e - 7)  # spacing of bf16 values in this binade
        lo = np.floor(a / q) * q
        hi = lo + q
        dlo, dhi = a - lo, hi - a
        lo_even = (np.floor(a / q) % 2) == 0
        r = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo_even, lo, hi)))
        r = np.where(np.isinf(a), np.inf, r)
        r = np.where(r > 3.3895313892515355e38, np.inf, r)  # beyond max finite -> inf
    bits = (r.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    bits |= np.where(np.signbit(x), 0x8000, 0).astype(np.uint16)
    out[:] = bits
    out[nan] = 0x7FC0
    return out


def section_dtype():
    prefix = os.path.join(WORK, "w")
    tool("widen", prefix)
    h = np.load(prefix + "_f16.npy")
    ref = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    check(np.array_equal(h.view(np.uint32), ref.view(np.uint32)) or
          (np.array_equal(np.isnan(h), np.isnan(ref)) and
           np.array_equal(h[~np.isnan(h)].view(np.uint32), ref[~np.isnan(ref)].view(np.uint32))),
          "fp16 -> f32 differs from numpy over the 65536 patterns")
    b = np.load(prefix + "_bf16.npy")
    refb = (np.arange(65536, dtype=np.uint32) << 16).view(np.float32)
    check(np.array_equal(b.view(np.uint32), refb.view(np.uint32)), "bf16 -> f32 differs")
    # inputs: every fp16/bf16 value, midpoints, midpoints +- 1 ulp (f32 and f64), random bits
    v16 = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    vb = (np.arange(0, 0x7F80, dtype=np.uint32) << 16).view(np.float32).astype(np.float64)
    mids = []
    for v, top in ((v16, 65520.0), (vb, 3.3961775292304884e38)):
        m = np.concatenate([(v[:-1] + v[1:]) / 2, [top]])
        mids.append(np.concatenate([v, m]))
    base = np.concatenate(mids)
    base = np.concatenate([base, -base])
    rng = np.random.default_rng(7)
    rand32 = rng.integers(0, 2**32, 2_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    f32 = np.concatenate([base.astype(np.float32),
                          np.nextafter(base.astype(np.float32), np.float32(np.inf)),
                          np.nextafter(base.astype(np.float32), np.float32(-np.inf)), rand32,
                          np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)])
    f32 = f32[f32.astype(np.float64) == f32.astype(np.float64)]  # drop NaNs for value compares
    f64 = np.concatenate([base, np.nextafter(base, np.inf), np.nextafter(base, -np.inf),
                          rand32.astype(np.float64) * (1 + 2.0**-30), [np.inf, -np.inf, 1e300, -1e-300]])
    f64 = f64[~np.isnan(f64)]
    for name, arr in (("f32", f32), ("f64", f64)):
        src = os.path.join(WORK, f"in_{name}.npy")
        np.save(src, arr)
        tool("conv", src, os.path.join(WORK, f"out_{name}"))
        got16 = np.load(os.path.join(WORK, f"out_{name}_f16.npy")).view(np.uint16)
        want16 = arr.astype(np.float16).view(np.uint16)  # numpy rounds f32/f64 -> f16 directly
        bad = np.nonzero(got16 != want16)[0]
        check(bad.size == 0, f"{name} -> fp16: {bad.size} of {arr.size} differ from numpy, e.g. "
              + ", ".join(f"{arr[i]!r}: {got16[i]:#06x} vs {want16[i]:#06x}" for i in bad[:3]))
        gotb = np.load(os.path.join(WORK, f"out_{name}_bf16.npy"))
        wantb = bf16_ref(arr.astype(np.float64))
        bad = np.nonzero(gotb != wantb)[0]
        check(bad.size == 0, f"{name} -> bf16: {bad.size} of {arr.size} differ from the reference, e.g. "
              + ", ".join(f"{arr[i]!r}: {gotb[i]:#06x} vs {wantb[i]:#06x}" for i in bad[:3]))
        print(f"{name}: {arr.size} values checked for fp16 and bf16")
    # the reference itself agrees with numpy's fp16 path when re-targeted? (sanity of bf16_ref)
    check(bf16_ref(np.array([1.0 + 2**-8]))[0] == 0x3F80 and bf16_ref(np.array([1.0 + 3 * 2**-8]))[0] == 0x3F82,
          "bf16_ref ties-to-even sanity")


ST_CODES = {"float16": "F16", "float32": "F32", "float64": "F64", "int8": "I8", "uint8": "U8",
            "int32": "I32", "int64": "I64", "bool": "BOOL"}


def st_write(path, tensors, meta=None, pad=True, order=None):
    header, data, off = {}, b"", 0
    if meta is not None:
        header["__metadata__"] = meta
    names = order or list(tensors)
    for name in names:
        code, arr = tensors[name]
        raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": code, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    h = json.dumps(header).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def st_read(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        out[name] = (e["dtype"], e["shape"], data[b:end])
    return header, out


def section_safetensors():
    tensors = {}
    for i, (dt, code) in enumerate(ST_CODES.items()):
        tensors[f"t_{dt}"] = (code, samples(dt, (2, 3) if i % 2 else (5,)))
    tensors["bf"] = ("BF16", samples("<u2", (4, 2)))
    tensors["empty"] = ("F32", np.zeros((0, 3), np.float32))
    tensors["scalar"] = ("F64", np.array(2.5))
    src, out = os.path.join(WORK, "a.safetensors"), os.path.join(WORK, "b.safetensors")
    # header order differs from data order: offsets decide, names survive
    st_write(src, tensors, meta={"format": "pt", "who": "numpy"}, order=sorted(tensors, reverse=True))
    info = tool("info", src)
    check(len(info.strip().splitlines()) == len(tensors), f"info lists {info!r}")
    tool("copy", src, out)
    header, back = st_read(out)
    check(header.get("__metadata__", {}).get("format") == "pt", "metadata format=pt written")
    check(len(struct.unpack("<Q", open(out, "rb").read(8))) == 1 and
          struct.unpack("<Q", open(out, "rb").read(8))[0] % 8 == 0, "header padded to 8 bytes")
    for name, (code, arr) in tensors.items():
        check(name in back, f"{name} missing after copy")
        if name not in back:
            continue
        bcode, bshape, braw = back[name]
        want = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        check(bcode == code and bshape == list(arr.shape) and braw == want,
              f"safetensors {name}: {bcode} {bshape} differs")
    # refusals
    def refuse(label, blob, needle):
        p = os.path.join(WORK, "bad.safetensors")
        open(p, "wb").write(blob)
        r = subprocess.run([TOOL, "info", p], capture_output=True, text=True)
        check(r.returncode == 1 and needle in r.stderr and "bad.safetensors" in r.stderr,
              f"{label}: expected an error with '{needle}', got rc={r.returncode} {r.stderr!r}")

    def blob(header, data=b""):
        h = json.dumps(header).encode()
        return struct.pack("<Q", len(h)) + h + data

    refuse("short", b"\x01\x00", "shorter than 8 bytes")
    refuse("header too big", struct.pack("<Q", 2**40) + b"{}", "too big")
    refuse("header past end", struct.pack("<Q", 100) + b"{}", "runs past the end")
    refuse("not json", struct.pack("<Q", 3) + b"{x}", "JSON syntax error")
    refuse("not object", struct.pack("<Q", 2) + b"[]", "must be a JSON object")
    refuse("dtype", blob({"a": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}}, b"\0"),
           "unsupported dtype 'F8_E4M3'")
    refuse("offsets out of range", blob({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4),
           "outside the 4-byte data section")
    refuse("size mismatch", blob({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4),
           "need 8")
    refuse("overlap", blob({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                            "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8),
           "overlap")
    refuse("hole", blob({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8),
           "unaccounted bytes")
    refuse("trailing", blob({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 8),
           "after the last tensor")
    refuse("negative", blob({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4),
           "non-negative integer")
    refuse("ndim", blob({"a": {"dtype": "F32", "shape": [1] * 9, "data_offsets": [0, 4]}}, b"\0" * 4),
           "at most 8")
    refuse("metadata", blob({"__metadata__": {"a": 1}}), "not a string")
    refuse("missing", blob({"a": {"dtype": "F32", "shape": [1]}}, b"\0" * 4), "data_offsets")
    nul = b'{"a\x00":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    refuse("raw NUL in a name", struct.pack("<Q", len(nul)) + nul + b"\0", "control byte 0x00")
    refuse("empty name", blob({"": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"\0"),
           "empty name")
    dup = (b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
           b'"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}')
    refuse("dup", struct.pack("<Q", len(dup)) + dup + b"\0\0", "duplicate tensor name")


def section_fill():
    # thread count never changes the bits; the generator is not numpy's but its
    # moments must look right to numpy too
    outs = []
    for th in ("1", "2", "5"):
        p = os.path.join(WORK, f"f{th}.npy")
        tool("fill", "normal(1, 3)", "float32", "1000003", "77", "q", th, p)
        outs.append(np.load(p))
    check(all(same_bits(outs[0], o) for o in outs), "fill differs across thread counts")
    x = outs[0].astype(np.float64)
    check(abs(x.mean() - 1) < 0.02 and abs(x.std() - 3) < 0.02, f"normal(1,3): {x.mean()} {x.std()}")
    # a Kolmogorov–Smirnov-style check against the normal CDF (numpy has erf via math)
    import math
    xs = np.sort((x - 1) / 3)[::997]
    cdf = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in xs])
    emp = np.arange(1, xs.size + 1) / xs.size
    check(np.max(np.abs(cdf - emp)) < 0.02, f"normal CDF distance {np.max(np.abs(cdf - emp))}")


with np.errstate(all="ignore"):
  {"npy": section_npy, "dtype": section_dtype, "safetensors": section_safetensors,
   "fill": section_fill}[SECTION]()
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
