"""Issue 23: diagnosis for Python goldens, on a pypto-layout op (custom/<op>/eval/, a torch
golden in modules/) with torch impls run by the same interpreter:
- a planted bug gets its output-space hint (scaled, sign_flip);
- golden_fallback from "Errcode:" and from "JIT execution failed" in the captured output,
  and from an output bit-exact with a golden that calls a transcendental (sigmoid); not
  on a correct impl that is not bit-exact;
- the CPU reproducer: the golden rerun in float64 and bfloat16 fills
  per_tensor[].cpu_reproducer, names what the impl is closest to, and gives
  low_precision_inputs (bf16 impl) or suite_calibration (an fp64 impl under a tolerance
  too tight for fp32 rounding).
Usage: py_golden_diag.py --phasegate EXE --tmp DIR --python PY"""
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


CONTRACT = """schema_version: 1
op: pgd
module_count: 1
is_fusion: false
has_cross_core: false
dims: {M: 64, K: 128, N: 64}
primary_inputs:
  - {name: x, shape: "[M, K]", dtype: float32, fill: normal(0, 1)}
  - {name: w, shape: "[K, N]", dtype: float32, fill: normal(0, 0.1)}
modules:
  - id: 1
    name: proj_sigmoid
    section: mix
    inputs: [{name: x, source: primary}, {name: w, source: primary}]
    outputs: [{name: y, shape: "[M, N]", dtype: float32}]
final_outputs:
  - {name: y, source: module_1}
"""
GOLDEN = """# Cumulative golden for module 1 of pgd. Pure torch.
import torch


def pgd_module1_golden(x, w):
    return torch.sigmoid(x @ w)
"""
SUITE = {"op": "pgd", "total_modules": 1, "cases": [
    {"id": "L2_a", "level": 2, "seed": 5, "atol": 1e-4, "rtol": 1e-4},
    {"id": "L5_tight", "level": 5, "seed": 5, "atol": 1e-9, "rtol": 1e-9}]}

IMPLS = {  # name: (body of pgd_module1_wrapper(x, w), case)
    "good": ("return torch.sigmoid(x.double() @ w.double()).float()", "L2_a"),
    "exact": ("return torch.sigmoid(x @ w)", "L2_a"),
    "scaled": ("return 2 * torch.sigmoid(x @ w)", "L2_a"),
    "sign": ("return -torch.sigmoid(x @ w)", "L2_a"),
    "errcode": ("print('launch kernel_0: Errcode: 507015 (aicore exception)')\n"
                "    return torch.sigmoid(x @ w)", "L2_a"),
    "jit": ("import sys\n    print('[pypto] JIT execution failed, running the reference', file=sys.stderr)\n"
            "    return torch.sigmoid(x @ w)", "L2_a"),
    "bf16": ("return torch.sigmoid(x.bfloat16() @ w.bfloat16()).float()", "L2_a"),
    "fp64": ("return torch.sigmoid(x.double() @ w.double()).float()", "L5_tight"),
}


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--phasegate", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    if subprocess.run([a.python, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"SKIP: torch is not importable by {a.python}")
        return 77
    shutil.rmtree(a.tmp, ignore_errors=True)
    op = os.path.join(a.tmp, "custom", "pgd")
    write(os.path.join(op, "eval", "module_interfaces.yaml"), CONTRACT)
    write(os.path.join(op, "eval", "adversarial_suite.json"), json.dumps(SUITE))
    write(os.path.join(op, "modules", "pgd_module1_golden.py"), GOLDEN)
    got = {}
    for name, (body, case) in IMPLS.items():
        impl = os.path.join(a.tmp, f"impl_{name}.py")
        write(impl, f"import torch\n\n\ndef pgd_module1_wrapper(x, w):\n    {body}\n")
        report = os.path.join(a.tmp, f"{name}.json")
        cmd = [a.phasegate, "run", "--op-dir", op, "--up-to-module", "1", "--impl", "python:" + impl,
               "--modes", "sim", "--case", case, "--report", report, "--no-bisect",
               "--python", a.python, "--no-golden-cache"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        print(f"$ {' '.join(cmd)}\n-> {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-2000:]}")
        rep = json.load(open(report)) if os.path.exists(report) else {"checks": []}
        ts = [t for c in rep["checks"] for t in c.get("per_tensor", [])]
        hints = [h for t in ts for h in t.get("hints", [])]
        got[name] = (r.returncode, [h["kind"] for h in hints], hints, ts, r.stdout + r.stderr, rep)

    rc, kinds, *_ = got["good"]
    check(rc == 0 and "golden_fallback" not in kinds, f"good (not bit-exact): PASS, no golden_fallback ({kinds})")
    rc, kinds, hints, ts, out, _ = got["exact"]
    fb = [h for h in hints if h["kind"] == "golden_fallback"]
    check(rc == 0 and fb and "golden uses a transcendental function" in fb[0]["detail"] and "sigmoid" not in fb[0]["detail"] and fb[0]["confidence"] == 0.6,
          f"exact (the golden's own torch code): PASS with golden_fallback, bit-exact on sigmoid ({fb})")
    for name, want in (("scaled", "scaled"), ("sign", "sign_flip")):
        rc, kinds, hints, ts, out, _ = got[name]
        check(rc == 1 and kinds[:1] == [want], f"{name}: FAIL, {want} strongest ({kinds})")
        check(f"looks {want}" in out, f"{name}: the console names {want}")
    for name, pattern in (("errcode", "Errcode:"), ("jit", "JIT execution failed")):
        rc, kinds, hints, ts, out, rep = got[name]
        fb = [h for h in hints if h["kind"] == "golden_fallback"]
        check(rc == 0 and fb and fb[0]["confidence"] >= 0.9 and pattern in fb[0]["detail"],
              f"{name}: PASS with golden_fallback naming '{pattern}' ({fb})")
        check("looks golden_fallback" in out, f"{name}: the console line names golden_fallback")
    rc, kinds, hints, ts, out, _ = got["bf16"]
    cr = ts[0].get("cpu_reproducer") if ts else None
    precisions = [v["precision"] for v in (cr or {}).get("variants", [])]
    check(rc == 1 and precisions == ["float64", "bfloat16"], f"bf16: the reproducer's variants ({cr})")
    check(cr and cr.get("impl_closest_to") == "bfloat16", f"bf16: closest to the bfloat16 rerun ({cr})")
    check(kinds[:1] == ["low_precision_inputs"], f"bf16: low_precision_inputs strongest ({kinds})")
    rc, kinds, hints, ts, out, _ = got["fp64"]
    cr = ts[0].get("cpu_reproducer") if ts else None
    check(rc == 1 and cr and cr.get("impl_closest_to") == "float64", f"fp64: closest to the float64 rerun ({cr})")
    check("suite_calibration" in kinds, f"fp64 at 1e-9: suite_calibration ({kinds})")
    check("low_precision_inputs" not in kinds, f"fp64: no low_precision_inputs ({kinds})")
    rc, kinds, hints, ts, out, _ = got["scaled"]
    check("suite_calibration" not in kinds and "low_precision_inputs" not in kinds,
          f"scaled: no reproducer hint ({kinds})")
    cr = ts[0].get("cpu_reproducer") if ts else None
    check(cr and cr.get("impl_closest_to") == "reference", f"scaled: closest to no rerun ({cr})")
    print("FAILED: " + "; ".join(failures) if failures else "all ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
