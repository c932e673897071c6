"""Issue 13 diagnosis: each hint kind of the counterfactual goldens planted as a bug in a
python: impl (numpy), seen on the failing tensor; silent on a correct impl; suite
strength lists gelu erf->tanh as undetected at atol = rtol = 1e-3 and not where a case
tells them apart. With --part attention (issue 23): the two kinds of an attention-like op
(a K or KV loop that stops one tile early, a chunked bf16 accumulator), silent on the
correct impl and on the other planted bugs.
Usage: diagnosis.py --phasegate EXE --tmp DIR --python PY [--part attention]"""
import argparse
import json
import os
import shutil
import subprocess
import sys

failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


MM = """schema_version: 1
op: mm
module_count: 1
is_fusion: false
has_cross_core: false
dims: {M: 24, K: 40, N: 24}
primary_inputs:
  - {name: a, shape: [M, K], dtype: float32, fill: normal(0, 1)}
  - {name: b, shape: [K, N], dtype: float32, fill: normal(0, 1)}
modules:
  - id: 1
    name: mm
    section: cube
    inputs: [{name: a, source: primary}, {name: b, source: primary}]
    outputs: [{name: y, shape: [M, N], dtype: float32}]
    golden:
      - y = matmul(a, b, alpha=1/sqrt(K))
final_outputs:
  - {name: y, source: module_1}
tolerance: {atol: 1e-3, rtol: 1e-3}
"""

GELU = """schema_version: 1
op: act
module_count: 1
is_fusion: false
has_cross_core: false
dims: {R: 16, C: 64}
primary_inputs:
  - {name: x, shape: [R, C], dtype: float32, fill: normal(0, 1)}
modules:
  - id: 1
    name: act
    section: vector
    inputs: [{name: x, source: primary}]
    outputs: [{name: y, shape: [R, C], dtype: float32}]
    golden:
      - y = gelu(x)
final_outputs:
  - {name: y, source: module_1}
tolerance: {atol: 1e-3, rtol: 1e-3}
"""

MM_IMPLS = {
    "good": "a @ b / np.sqrt(a.shape[1])",
    "transposed": "(a @ b / np.sqrt(a.shape[1])).T",
    "scaled": "a @ b",
    "tail": "a[:, :32] @ b[:32] / np.sqrt(a.shape[1])",
    "sign": "-(a @ b) / np.sqrt(a.shape[1])",
    "zeros": "np.zeros((a.shape[0], b.shape[1]), np.float32)",
    "shifted": "np.roll(a @ b / np.sqrt(a.shape[1]), 1, axis=0)",
    "lowp": "bf16(a) @ bf16(b) / np.sqrt(a.shape[1])",
    "f16acc": "f16acc(a, b) / np.sqrt(a.shape[1])",
}
# The geometry the strongest hint names: shifted along axis 0; the dropped K tail of
# K = 40 is the last tile of 8, 16 and 32 (one mutant, named by the largest power of two).
MM_GEOMETRY = {"shifted": {"axis": 0}}
MM_WANT = {"transposed": "transposed", "scaled": "scaled", "tail": "reduction_tail_dropped",
           "sign": "sign_flip", "zeros": "zeros", "shifted": "shifted",
           "lowp": "low_precision_inputs", "f16acc": "low_precision_accumulation"}


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def run(a, op_dir, impl, tag, extra=(), cache=None, strength=True):
    """strength: --suite-strength (computed on a cache miss); without it a run shows
    suite strength only from the golden cache."""
    report = os.path.join(a.tmp, f"{tag}.json")
    cmd = [a.phasegate, "run", "--op-dir", op_dir, "--up-to-module", "1", "--impl", impl,
           "--modes", "sim", "--report", report, "--no-bisect", "--python", a.python,
           *(() if cache else ("--no-golden-cache",)),
           *(("--suite-strength",) if strength else ()), *extra]
    env = dict(os.environ, PHASEGATE_CACHE_DIR=cache) if cache else None
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    print(f"$ {' '.join(cmd)}\n-> {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    rep = json.load(open(report)) if os.path.exists(report) else None
    return r.returncode, rep, r.stdout + r.stderr


def tensors(rep):
    return [t for c in rep["checks"] for t in c.get("per_tensor", [])]


def vacuous_mutants(a):
    """A plan mutant that changes nothing (fp16 data rounded to fp16 or tf32, a 1 x 1
    operand transposed) is no hypothesis: not listed on the attention suite's fp16
    cases; rounding fp32 inputs to fp16 is, where the case's tolerance lets it pass."""
    report = os.path.join(a.tmp, "attention.json")
    cmd = [a.phasegate, "run", "--op-dir", a.attention_dir, "--up-to-module", "3",
           "--impl", "plugin:" + a.attention_impl, "--report", report, "--no-golden-cache",
           "--suite-strength"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print(f"$ {' '.join(cmd)}\n-> {r.returncode}\n{r.stdout[-4000:]}{r.stderr[-2000:]}")
    rep = json.load(open(report)) if os.path.exists(report) else {"checks": []}
    by_case = {}
    for c in rep["checks"]:
        for t in c.get("per_tensor", []):
            by_case.setdefault(c["id"], []).extend(t.get("undetected_mutants", []))
    check(r.returncode == 0 and len(by_case) >= 15, f"attention M3 passes, strength ran ({len(by_case)} cases)")
    for case, um in by_case.items():
        fp16_in = [u for u in um if "inputs rounded to fp16" in u or "inputs rounded to tf32" in u]
        if case == "L2_fp32":
            check(any("inputs rounded to fp16" in u for u in um),
                  f"{case}: fp32 inputs rounded to fp16 would pass, listed ({um})")
        else:
            check(not fp16_in, f"{case}: fp16 inputs, no fp16/tf32 rounding mutant ({fp16_in})")
        check(not any("trans_a flipped" in u for u in um), f"{case}: no 1 x 1 transpose ({um})")


SOFTMAX = GELU.replace("op: act", "op: sm").replace("name: act", "name: sm").replace(
    "y = gelu(x)", "y = softmax(x, axis=-1)").replace("tolerance: {atol: 1e-3, rtol: 1e-3}",
                                                      "tolerance: {atol: 1e-5, rtol: 1e-4}")

# y = a @ b + c with c zero in half the cells: there y is a cancelling matmul (tiny, off
# by accumulation noise), elsewhere |y| >= 1000 (rtol governs, 1 ulp): a tolerance too
# tight for the near-zero cells flags cpu_reproducer_candidate.
CAL = """schema_version: 1
op: cal
module_count: 1
is_fusion: false
has_cross_core: false
dims: {M: 64, K: 256, N: 64}
primary_inputs:
  - {name: a, shape: [M, K], dtype: float32, fill: normal(0, 1)}
  - {name: b, shape: [K, N], dtype: float32, fill: normal(0, 1)}
  - {name: c, shape: [M, N], dtype: float32, fill: "uniform(1000, 2000) with -0:0.5"}
modules:
  - id: 1
    name: cal
    section: cube
    inputs: [{name: a, source: primary}, {name: b, source: primary}, {name: c, source: primary}]
    outputs: [{name: t, shape: [M, N], dtype: float32}, {name: y, shape: [M, N], dtype: float32}]
    golden:
      - t = matmul(a, b)
      - y = t + c
final_outputs:
  - {name: y, source: module_1}
"""
CAL_CASE = {"id": "L5_tight", "level": 5, "seed": 3, "atol": 5e-7, "rtol": 1e-4,
            "cancellation_stress": {"target": "t", "expression": "matmul",
                                    "relative_gap": 1e-5, "seed": 1}}


def planted(a, tag, contract, cases, impls):
    """Each impl (name -> (function body, wanted strongest hint or None for a correct
    impl)) run on the contract (op name: tag's first word); a correct one passes with
    no hint."""
    op = os.path.join(a.tmp, tag)
    write(os.path.join(op, "module_interfaces.yaml"), contract)
    write(os.path.join(op, "adversarial_suite.json"),
          json.dumps({"op": tag.split("_")[0], "total_modules": 1, "cases": cases}))
    reps = {}
    for name, (body, want) in impls.items():
        path = os.path.join(a.tmp, f"{tag}_{name}.py")
        write(path, "import math\nimport numpy as np\n\n" + body)
        rc, rep, out = run(a, op, "python:" + path, f"{tag}_{name}")
        reps[name] = (rc, rep, out)
        kinds = [h["kind"] for t in tensors(rep) for h in t.get("hints", [])] if rep else None
        if want is None:
            # a numpy impl of the golden's own formula may be bit-exact with it: the PASS
            # note golden_fallback is about that, not a diagnosis of a bug
            kinds = [k for k in kinds or [] if k != "golden_fallback"] if rep else None
            check(rc == 0 and kinds == [], f"{tag} {name} (correct): PASS, no hint ({kinds})")
        else:
            check(rc == 1 and kinds[:1] == [want], f"{tag} {name}: FAIL, {want} strongest ({kinds})")
            check(f"looks {want}" in out, f"{tag} {name}: the console line names {want}")
    return reps


def more_hints(a):
    """input_echo, wrong_axis and suite_calibration planted (low_precision_accumulation
    is in the matmul set), each silent on a correct impl."""
    gelu = ("def act_module1_wrapper(x):\n    x = np.asarray(x, np.float64)\n"
            "    e = np.vectorize(math.erf)(x / math.sqrt(2))\n"
            "    return (0.5 * x * (1 + e)).astype(np.float32)\n")
    planted(a, "act_echo", GELU, [{"id": "L2_a", "level": 2, "seed": 4}], {
        "good": (gelu, None),
        "echo": ("def act_module1_wrapper(x):\n    return np.asarray(x, np.float32).copy()\n",
                 "input_echo")})
    sm = ("def sm_module1_wrapper(x):\n    x = np.asarray(x, np.float64)\n"
          "    e = np.exp(x - x.max(axis=AX, keepdims=True))\n"
          "    return (e / e.sum(axis=AX, keepdims=True)).astype(np.float32)\n")
    reps = planted(a, "sm_axis", SOFTMAX, [{"id": "L2_a", "level": 2, "seed": 5}], {
        "good": (sm.replace("AX", "-1"), None),
        "axis0": (sm.replace("AX", "0"), "wrong_axis")})
    rep = reps["axis0"][1]
    geo = [{k: h[k] for k in ("axis", "tile") if k in h}
           for t in tensors(rep) for h in t.get("hints", []) if h["kind"] == "wrong_axis"] if rep else []
    check(geo[:1] == [{"axis": 0}], f"sm_axis axis0: wrong_axis names axis 0 ({geo})")
    # a fast exp (the exponent-bit trick) inside the softmax -> approximation
    fexp = ("def fexp(v):\n"
            "    hi = (1512775.3951951856 * v + 1072632447.0).astype(np.int64) << 32\n"
            "    return hi.view(np.float64)\n\n")
    planted(a, "sm_fastexp", SOFTMAX, [{"id": "L2_a", "level": 2, "seed": 5}], {
        "fast": (fexp + sm.replace("AX", "-1").replace("np.exp(", "fexp("), "approximation")})
    # the kernel innocent: fp64 accumulation, failing only a tolerance too tight for
    # the cancelling cells -> suite_calibration; at a sane tolerance it passes silently
    good = ("def cal_module1_wrapper(a, b, c):\n"
            "    t = (np.asarray(a, np.float64) @ np.asarray(b, np.float64)).astype(np.float32)\n"
            "    return (t + np.asarray(c, np.float32)).astype(np.float32)\n")
    planted(a, "cal_tight", CAL, [CAL_CASE], {"fp64": (good, "suite_calibration")})
    planted(a, "cal_sane", CAL, [{"id": "L5_sane", "level": 5, "seed": 3}], {"fp64": (good, None)})
    # a real bug that still looks like noise to the flag (near-zero cells only, under
    # rtol x RMS) but is far outside what other summation orders do: no calibration hint
    bug = good.replace("return (t + np.asarray(c, np.float32))",
                       "return np.where(np.asarray(c) == 0, 0, t + np.asarray(c, np.float32))")
    path = os.path.join(a.tmp, "cal_zeroskip.py")
    write(path, "import numpy as np\n\n" + bug)
    rc, rep, out = run(a, os.path.join(a.tmp, "cal_tight"), "python:" + path, "cal_zeroskip")
    ts = tensors(rep) if rep else []
    kinds = [h["kind"] for t in ts for h in t.get("hints", [])]
    check(rc == 1 and any(t.get("cpu_reproducer_candidate") for t in ts),
          f"cal zeroskip (y = 0 where c = 0): FAIL, still a cpu_reproducer_candidate")
    check("suite_calibration" not in kinds,
          f"cal zeroskip: outside the summation-order spread, no suite_calibration ({kinds})")


# A held-out attention-like op, one module of built-in steps: the two kinds a K loop and
# a KV loop get wrong (issue 23), next to the kinds the fault zoo plants.
ATT = """schema_version: 1
op: att
module_count: 1
is_fusion: true
has_cross_core: false
dims: {B: 1, H: 2, S: 128, D: 64}
primary_inputs:
  - {name: q, shape: [B, H, S, D], dtype: float32, fill: normal(0, 1)}
  - {name: k, shape: [B, H, S, D], dtype: float32, fill: normal(0, 1)}
  - {name: v, shape: [B, H, S, D], dtype: float32, fill: uniform(-1, 1)}
modules:
  - id: 1
    name: attention
    section: mix
    inputs: [{name: q, source: primary}, {name: k, source: primary}, {name: v, source: primary}]
    outputs: [{name: out, shape: [B, H, S, D], dtype: float32}]
    golden:
      - s = matmul(q, k, trans_b=true, alpha=1/sqrt(D))
      - p = softmax(s, axis=-1)
      - out = matmul(p, v)
final_outputs:
  - {name: out, source: module_1}
tolerance: {atol: 1e-4, rtol: 1e-4}
"""
# The impl's pieces: QK^T over the first DK of D, the KV loop over the first SK keys,
# P.V over the first PK of them (softmax over all), P.V accumulated in bf16 per chunk.
ATT_IMPL = """import numpy as np

def bf16(x):
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000
    return u.astype(np.uint32).view(np.float32)

def att_module1_wrapper(q, k, v):
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    D, S = q.shape[-1], q.shape[-2]
    DK, SK, PK, CHUNK, SCALE, SIGN, AX = {knobs}
    s = q[..., :DK] @ np.swapaxes(k[..., :SK, :DK], -1, -2) * SCALE
    e = np.exp(s - s.max(axis=AX, keepdims=True))
    p = e / e.sum(axis=AX, keepdims=True)
    if CHUNK:
        p32, v32 = p.astype(np.float32), v[..., :SK, :].astype(np.float32)
        acc = np.zeros(q.shape[:-1] + (v.shape[-1],), np.float32)
        for c0 in range(0, SK, CHUNK):
            part = p32[..., c0:c0 + CHUNK] @ v32[..., c0:c0 + CHUNK, :]
            acc = bf16(acc + part)
        out = acc.astype(np.float64)
    else:
        out = p[..., :PK] @ v[..., :PK, :]
    return np.ascontiguousarray((SIGN * out).astype(np.float32))
"""
D_, S_ = 64, 128
SC = "1 / np.sqrt(D)"
ATT_CASES = {  # name: ((DK, SK, PK, CHUNK, SCALE, SIGN, AX), the strongest hint or None)
    "good": ((D_, S_, S_, 0, SC, 1, -1), None),
    "qk_tail": ((D_ - 16, S_, S_, 0, SC, 1, -1), "reduction_tail_dropped"),
    "kv_tail": ((D_, S_ - 32, S_ - 32, 0, SC, 1, -1), "reduction_tail_dropped"),
    "pv_tail": ((D_, S_, S_ - 32, 0, SC, 1, -1), "reduction_tail_dropped"),
    "bf16acc": ((D_, S_, S_, 32, SC, 1, -1), "low_precision_accumulation"),
    "scaled": ((D_, S_, S_, 0, "1", 1, -1), "scaled"),
    "sign": ((D_, S_, S_, 0, SC, -1, -1), "sign_flip"),
    "axis": ((D_, S_, S_, 0, SC, 1, -2), "wrong_axis"),
    "zeros": ((D_, S_, S_, 0, SC, 0, -1), "zeros"),
}
ATT_DETAIL = {"qk_tail": "step 1 matmul: last K tile dropped", "kv_tail": "step 2 softmax: last block",
              "pv_tail": "step 3 matmul: last K tile dropped", "bf16acc": "step 3 matmul: bf16 accumulator"}
ATT_TILE = {"qk_tail": 16, "kv_tail": 32, "pv_tail": 32}
NEW_KINDS = ("reduction_tail_dropped", "low_precision_accumulation")


def attention_kinds(a):
    """The two kinds on an attention-like op with built-in goldens, each with high
    confidence and its geometry; silent on the correct impl; never on the other bugs."""
    op = os.path.join(a.tmp, "att")
    write(os.path.join(op, "module_interfaces.yaml"), ATT)
    write(os.path.join(op, "adversarial_suite.json"),
          json.dumps({"op": "att", "total_modules": 1, "cases": [{"id": "L2_a", "level": 2, "seed": 9}]}))
    for name, (knobs, want) in ATT_CASES.items():
        path = os.path.join(a.tmp, f"att_{name}.py")
        write(path, ATT_IMPL.replace("{knobs}", ", ".join(str(x) for x in knobs)))
        rc, rep, out = run(a, op, "python:" + path, f"att_{name}")
        hints = [h for t in tensors(rep) for h in t.get("hints", [])] if rep else []
        kinds = [h["kind"] for h in hints]
        if want is None:
            check(rc == 0 and not [k for k in kinds if k != "golden_fallback"],
                  f"att {name} (correct): PASS, no hint ({kinds})")
            continue
        check(rc == 1 and kinds[:1] == [want], f"att {name}: FAIL, {want} strongest ({kinds})")
        if want in NEW_KINDS:
            h = hints[0] if hints else {}
            check(h.get("confidence", 0) >= 0.9, f"att {name}: confidence >= 0.9 ({h.get('confidence')})")
            check(ATT_DETAIL[name] in h.get("detail", ""), f"att {name}: detail names the step ({h.get('detail')})")
            if name in ATT_TILE:
                check(h.get("tile") == ATT_TILE[name], f"att {name}: tile {ATT_TILE[name]} ({h.get('tile')})")
            check(f"looks {want}" in out, f"att {name}: the console line names {want}")
        else:
            wrong = [k for k in kinds if k in NEW_KINDS]
            check(not wrong, f"att {name}: no false {NEW_KINDS} hint ({kinds})")
        d = rep["checks"][0].get("durations_ms", {}) if rep else {}
        print(f"att {name}: durations_ms {d}")


def strength_cache(a, act, impl):
    """Suite strength is kept beside the cached golden (docs/runner.md "Suite strength"):
    a phase run on a cold cache does not compute it unless asked; `phasegate selftest
    --suite-strength` computes it once; a later run shows it from the cache without
    recomputing; a changed case or contract tolerance is another key."""
    cache = os.path.join(a.tmp, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    suite = {"op": "act", "total_modules": 1, "cases": [{"id": "L2_loose", "level": 2, "seed": 1}]}
    write(os.path.join(act, "adversarial_suite.json"), json.dumps(suite))

    def strength_of(rep):
        um = [u for t in tensors(rep) for u in t.get("undetected_mutants", [])] if rep else None
        keyed = [t for t in tensors(rep) if "undetected_mutants" in t] if rep else []
        src = rep["checks"][0].get("suite_strength") if rep else None
        diag = rep["checks"][0].get("durations_ms", {}).get("diagnosis", -1) if rep else -1
        return um, keyed, src, diag

    def stored():
        return [e for e in os.listdir(cache) if os.path.exists(os.path.join(cache, e, "STRENGTH"))]

    # cold cache, not asked: not computed, said so (report and console), nothing stored
    rc, rep, out = run(a, act, "python:" + impl, "cache_cold", cache=cache, strength=False)
    um, keyed, src, cold_diag = strength_of(rep)
    check(rc == 0 and src == "not_computed" and not keyed and not stored(),
          f"cold run: suite strength not computed unless asked ({src}, {keyed}, {stored()})")
    check("suite strength not computed for 1 case(s)" in out, "cold run: a console note says so")
    # computed once, by the composition test's command
    cmd = [a.phasegate, "selftest", "--op-dir", act, "--python", a.python, "--suite-strength"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PHASEGATE_CACHE_DIR=cache))
    print(f"$ {' '.join(cmd)}\n-> {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    check(r.returncode in (0, 77) and "suite strength M1: 1 cases: 1 computed" in r.stdout,
          f"selftest --suite-strength computes it (exit {r.returncode})")
    check(len(stored()) == 1, f"the golden's cache entry holds STRENGTH ({stored()})")
    # every later phase run shows it from the cache, not recomputing it
    rc, rep, out = run(a, act, "python:" + impl, "cache_warm", cache=cache, strength=False)
    um, keyed, src, diag = strength_of(rep)
    check(rc == 0 and src == "cached", f"warm run: suite strength from the cache ({src})")
    check("weak suite" in out and "suite strength not computed" not in out,
          "warm run: the warning line from the cache")
    check(any(u.startswith("approximation:") for u in um or []),
          f"warm run: the undetected mutants from the cache ({um})")
    # a changed case is another key: not computed again unless asked
    suite["cases"][0]["seed"] = 2
    write(os.path.join(act, "adversarial_suite.json"), json.dumps(suite))
    rc, rep, out = run(a, act, "python:" + impl, "cache_changed", cache=cache, strength=False)
    um, keyed, src, diag = strength_of(rep)
    check(src == "not_computed" and not keyed, f"changed case: the cached strength is not used ({src})")
    rc, rep, out = run(a, act, "python:" + impl, "cache_asked", cache=cache)
    um, keyed, src, asked_diag = strength_of(rep)
    check(src == "computed" and any(u.startswith("approximation:") for u in um or []),
          f"--suite-strength on a miss: computed ({src}, {um})")
    check(len(stored()) == 2, f"and stored ({stored()})")
    rc, rep, out = run(a, act, "python:" + impl, "cache_asked_warm", cache=cache)
    um, keyed, src, warm_diag = strength_of(rep)
    check(src == "cached" and 0 <= warm_diag < asked_diag,
          f"--suite-strength on a hit: read, not recomputed ({src}, {warm_diag} < {asked_diag} ms)")
    suite["cases"][0]["seed"] = 1
    write(os.path.join(act, "adversarial_suite.json"), json.dumps(suite))
    tight = GELU.replace("tolerance: {atol: 1e-3, rtol: 1e-3}", "tolerance: {atol: 1e-6, rtol: 1e-6}")
    write(os.path.join(act, "module_interfaces.yaml"), tight)
    rc, rep, out = run(a, act, "python:" + impl, "cache_tight", cache=cache)
    um = [u for t in tensors(rep) for u in t.get("undetected_mutants", [])] if rep else None
    check(um is not None and not any(u.startswith("approximation:") for u in um),
          f"contract tolerance tightened: a new key, approximation not listed ({um})")
    write(os.path.join(act, "module_interfaces.yaml"), GELU)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--phasegate", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--attention-dir", help="suites/attention, for the vacuous-mutant check")
    ap.add_argument("--attention-impl", help="its plugin impl (libattention_impl.so)")
    ap.add_argument("--part", choices=("main", "attention"), default="main",
                    help="attention: only the attention-like op's kinds (its own test)")
    a = ap.parse_args()
    os.makedirs(a.tmp, exist_ok=True)
    if a.part == "attention":
        attention_kinds(a)
        print("FAILED: " + "; ".join(failures) if failures else "all ok")
        return 1 if failures else 0
    mm = os.path.join(a.tmp, "mm")
    write(os.path.join(mm, "module_interfaces.yaml"), MM)
    write(os.path.join(mm, "adversarial_suite.json"),
          json.dumps({"op": "mm", "total_modules": 1,
                      "cases": [{"id": "L2_a", "level": 2, "seed": 3}]}))
    for name, expr in MM_IMPLS.items():
        path = os.path.join(a.tmp, f"mm_{name}.py")
        write(path, "import numpy as np\n\ndef bf16(x):\n"
                    "    u = x.astype(np.float32).view(np.uint32)\n"
                    "    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000\n"
                    "    return u.astype(np.uint32).view(np.float32)\n\n"
                    "def f16acc(a, b):  # every partial sum of the K loop stored as fp16\n"
                    "    acc = np.zeros((a.shape[0], b.shape[1]), np.float16)\n"
                    "    for q in range(a.shape[1]):\n"
                    "        p = (a[:, q, None] * b[None, q, :]).astype(np.float32)\n"
                    "        acc = (acc.astype(np.float64) + p).astype(np.float32).astype(np.float16)\n"
                    "    return acc.astype(np.float64)\n\n"
                    f"def mm_module1_wrapper(a, b):\n"
                    f"    a = np.asarray(a, np.float32); b = np.asarray(b, np.float32)\n"
                    f"    return np.ascontiguousarray(({expr}).astype(np.float32))\n")
        rc, rep, out = run(a, mm, "python:" + path, f"mm_{name}")
        if rep is None:
            check(False, f"{name}: a report")
            continue
        kinds = [h["kind"] for t in tensors(rep) for h in t.get("hints", [])]
        if name == "good":
            check(rc == 0 and not kinds, f"correct impl: PASS and no hint ({kinds})")
            continue
        want = MM_WANT[name]
        check(rc == 1 and kinds[:1] == [want], f"{name}: FAIL with {want} strongest ({kinds})")
        geo = [{k: h[k] for k in ("axis", "tile") if k in h}
               for t in tensors(rep) for h in t.get("hints", []) if h["kind"] == want][:1]
        check(geo == [MM_GEOMETRY.get(name, {})] or (name == "tail" and geo == [{"tile": 32}]),
              f"{name}: the hint's geometry ({geo})")
        check(f"looks {want}" in out, f"{name}: the console line names {want}")
        d = rep["checks"][0].get("durations_ms", {})
        check("diagnosis" in d, f"{name}: durations_ms.diagnosis ({d})")

    # Suite strength: gelu with tanh where the golden is erf passes at 1e-3 ...
    act = os.path.join(a.tmp, "act")
    write(os.path.join(act, "module_interfaces.yaml"), GELU)
    tanh = os.path.join(a.tmp, "act_tanh.py")
    erf = os.path.join(a.tmp, "act_erf.py")
    write(tanh, "import numpy as np\n\ndef act_module1_wrapper(x):\n    x = np.asarray(x, np.float64)\n"
                "    y = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))\n"
                "    return y.astype(np.float32)\n")
    write(erf, "import math\nimport numpy as np\n\ndef act_module1_wrapper(x):\n"
               "    x = np.asarray(x, np.float64)\n"
               "    e = np.vectorize(math.erf)(x / math.sqrt(2))\n"
               "    return (0.5 * x * (1 + e)).astype(np.float32)\n")
    write(os.path.join(act, "adversarial_suite.json"),
          json.dumps({"op": "act", "total_modules": 1,
                      "cases": [{"id": "L2_loose", "level": 2, "seed": 1}]}))
    rc, rep, out = run(a, act, "python:" + tanh, "weak")
    um = [u for t in tensors(rep) for u in t.get("undetected_mutants", [])] if rep else []
    check(rc == 0, f"gelu tanh vs erf golden passes at 1e-3 (exit {rc})")
    check(any(u.startswith("approximation:") for u in um), f"weak suite: approximation listed ({um})")
    check("weak suite" in out and "approximation" in out, "weak suite: a console warning")
    # ... a case at a tolerance that tells them apart does not list it, and the impl
    # failing there gets the approximation hint
    write(os.path.join(act, "adversarial_suite.json"),
          json.dumps({"op": "act", "total_modules": 1,
                      "cases": [{"id": "L2_tight", "level": 2, "seed": 1,
                                 "atol": 1e-6, "rtol": 1e-6}]}))
    rc, rep, out = run(a, act, "python:" + erf, "strong")
    um = [u for t in tensors(rep) for u in t.get("undetected_mutants", [])] if rep else []
    check(rc == 0 and not any(u.startswith("approximation:") for u in um),
          f"strong suite: erf impl passes, approximation not listed ({um})")
    rc, rep, out = run(a, act, "python:" + tanh, "tight_tanh")
    kinds = [h["kind"] for t in tensors(rep) for h in t.get("hints", [])] if rep else []
    check(rc == 1 and "approximation" in kinds[:1], f"gelu tanh at 1e-6: approximation hint ({kinds})")
    strength_cache(a, act, tanh)
    more_hints(a)
    # bounds: --diagnose-budget 0 turns the diagnosis off
    rc, rep, out = run(a, mm, "python:" + os.path.join(a.tmp, "mm_scaled.py"), "off",
                       ("--diagnose-budget", "0", "--suite-strength-max-elems", "0"))
    kinds = [h["kind"] for t in tensors(rep) for h in t.get("hints", [])] if rep else []
    um = [t for t in tensors(rep) if "undetected_mutants" in t] if rep else []
    check(rc == 1 and not kinds and not um, f"--diagnose-budget 0: no hint, no strength ({kinds})")
    if a.attention_dir and a.attention_impl:
        vacuous_mutants(a)
    print("FAILED: " + "; ".join(failures) if failures else "all ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
