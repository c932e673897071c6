"""Inspection probes (docs/diagnosis.md "Inspection probes"): module 1 of a chunked
accumulation declares `inspect: [{name: acc, shape: [ITERS, B, D]}]`; the impl returns
`inspection_acc`, the reference comes from the golden step `acc = cumsum(x, axis=0)`.

    probes.py PHASEGATE OP_DIR PLUGIN_CORRECT PLUGIN_DRIFT PLUGIN_SKIP PYTHON OUTDIR

python: (numpy through phasegate's worker), exec: (numpy through tools/pg_exec_helper.py,
probe_exec.py) and plugin impls: correct -> no drift; drifting
from iteration 5 -> first_failure.drift_onset_iter 5; a probe the impl does not return ->
a structural failure naming inspection_acc; the reference probe values never reach the
report or the console (only metrics).
"""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

pg, op, p_ok, p_drift, p_skip, python, out = sys.argv[1:8]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
impl_py = os.path.join(op, "impl.py")
impl_exec = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe_exec.py")
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)


def run(name, impl, k=1, extra=()):
    rep = os.path.join(out, name + ".json")
    args = [pg, "run", "--op-dir", op, "--impl", impl, "--up-to-module", str(k), "--report", rep,
            "--no-golden-cache", "--python", python] + list(extra)
    p = subprocess.run(args, capture_output=True, text=True)
    text = p.stdout + p.stderr
    print("$ " + " ".join(args) + "\n" + text)
    with open(os.path.join(out, name + ".console.txt"), "w") as f:
        f.write(text)
    with open(rep) as f:
        return p.returncode, text, json.load(f)


def probes_of(rep):
    return [p for c in rep["checks"] for p in c.get("inspection", [])]


for kind, correct, drift, skip in (
        ("python", "python:%s::chunk_accum_module1_wrapper" % impl_py,
         "python:%s::drift_wrapper" % impl_py, "python:%s::no_probe_wrapper" % impl_py),
        ("plugin", "plugin:" + p_ok, "plugin:" + p_drift, "plugin:" + p_skip),
        ("exec",) + tuple("exec:%s %s %s" % (python, impl_exec, v)
                          for v in ("correct", "drift", "skip"))):
    rc, text, rep = run(kind + "_correct", correct)
    ps = probes_of(rep)
    check(rc == 0 and rep["status"] == "PASS", kind + " correct: PASS")
    check(len(ps) == 2 and all(p["compared"] and p["drift_onset_iter"] is None for p in ps),
          kind + " correct: both cases' probes compared, no drift")
    check([p["iterations"] for p in ps] == [8, 12], kind + " correct: 8 and 12 iterations")
    check(all(it["passed"] for p in ps for it in p["per_iteration"]),
          kind + " correct: every iteration inside the tolerance")
    check("inspection acc: no drift over 8 iterations" in text, kind + " correct: console line")

    rc, text, rep = run(kind + "_drift", drift)
    ff = rep["first_failure"] or {}
    check(rc == 1 and ff.get("failure_category") == "precision", kind + " drift: precision FAIL")
    check(ff.get("drift_onset_iter") == 5 and ff.get("drift_probe") == "acc",
          kind + " drift: first_failure.drift_onset_iter 5 (got %r)" % ff.get("drift_onset_iter"))
    p0 = probes_of(rep)[0]
    check([it["passed"] for it in p0["per_iteration"]] == [True] * 5 + [False] * 3,
          kind + " drift: iterations 0-4 pass, 5-7 fail")
    check(p0["per_iteration"][5]["mismatches"] == 64, kind + " drift: 64 mismatches at 5")
    check("drifts from iteration 5 of 8" in text, kind + " drift: console line")
    check("first leaves the tolerance at iteration 5" in text, kind + " drift: hint")

    rc, text, rep = run(kind + "_missing", skip)
    ff = rep["first_failure"] or {}
    check(rc == 1 and ff.get("failure_category") == "structural",
          kind + " missing probe: structural")
    check("inspection_acc" in ff.get("summary", ""), kind + " missing probe: names it")

# --inspect acc prints every iteration; a phase without probes has no inspection key
rc, text, rep = run("inspect_flag", "plugin:" + p_drift, extra=["--case", "L2_basic",
                                                                "--inspect", "acc"])
check(rc == 1 and "iter 5: mismatches 64 of 64" in text and "iter 4: mismatches 0 of 64" in text,
      "--inspect acc: a line per iteration")
rc, text, rep = run("phase2", "python:%s::chunk_accum_module12_wrapper" % impl_py, k=2)
check(rc == 0 and not probes_of(rep) and "inspection" not in rep["checks"][0],
      "phase 2 (no probes): PASS without an inspection key")

# A Python golden gives the reference probes through its companion _inspect function
pyop = os.path.join(out, "pyop")
shutil.copytree(op, pyop)
os.makedirs(os.path.join(pyop, "modules"))
with open(os.path.join(pyop, "modules", "chunk_accum_module1_golden.py"), "w") as f:
    f.write("""import numpy as np


def chunk_accum_module1_golden(x, w):
    return np.asarray(x, dtype=np.float64).sum(axis=0)


def chunk_accum_module1_inspect(x, w):
    return {"acc": np.cumsum(np.asarray(x, dtype=np.float64), axis=0)}
""")
op_saved = op
op = pyop
rc, text, rep = run("pygolden_drift", "plugin:" + p_drift)
ff = rep["first_failure"] or {}
check(rc == 1 and ff.get("drift_onset_iter") == 5, "Python golden _inspect: drift_onset_iter 5")
rc, text, rep = run("pygolden_ok", "plugin:" + p_ok)
check(rc == 0 and all(p["drift_onset_iter"] is None and p["compared"] for p in probes_of(rep)),
      "Python golden _inspect: a correct impl does not drift")
with open(os.path.join(pyop, "modules", "chunk_accum_module1_golden.py"), "a") as f:
    f.write("\ndel chunk_accum_module1_inspect\n")
rc, text, rep = run("pygolden_no_inspect", "plugin:" + p_ok)
check(rc == 2 and "chunk_accum_module1_inspect" in text,
      "a Python golden without its _inspect function: an error naming it")
op = op_saved

# validate: a probe no step computes, a probe without an iteration axis, a duplicate
with open(os.path.join(op, "module_interfaces.yaml")) as f:
    contract = f.read()
for what, old, new, want in (
        ("no step", "{name: acc, shape", "{name: acc2, shape", "'acc2' of module 1 is computed by none"),
        ("no axis", "{name: acc, shape: [ITERS, B, D]", "{name: acc, shape: []",
         "needs a leading (iteration) axis"),
        ("twice", "      - {name: acc, shape: [ITERS, B, D], dtype: float32}\n",
         "      - {name: acc, shape: [ITERS, B, D], dtype: float32}\n"
         "      - {name: acc, shape: [ITERS, B, D], dtype: float32}\n", "is declared twice")):
    bad = os.path.join(out, "bad_" + what.replace(" ", "_"))
    os.makedirs(bad)
    assert old in contract, old
    with open(os.path.join(bad, "module_interfaces.yaml"), "w") as f:
        f.write(contract.replace(old, new))
    p = subprocess.run([pg, "validate", "--op-dir", bad], capture_output=True, text=True)
    print(p.stdout + p.stderr)
    check(p.returncode == 2 and want in p.stdout + p.stderr and "module_interfaces.yaml:1" in
          p.stdout + p.stderr, "validate: probe %s is an error at its line" % what)

# The barrier: the plugin prints its probe value after iteration 3 (a reference value:
# the drift starts at 5); the captured output is in the report, and on the console of a
# failing run.
data = os.path.join(out, "data")
rc, text, rep = run("barrier", "plugin:" + p_ok, extra=["--case", "L2_basic",
                                                        "--save-data", data])
x = np.load(os.path.join(data, "L2_basic", "in", "x.npy")).astype(np.float64)
acc = np.cumsum(x, axis=0)
printed = "%.6g" % np.float32(acc[3].reshape(-1)[0])
vals = np.abs(acc.reshape(-1))
for name in ("barrier.json", "plugin_drift.json", "plugin_drift.console.txt"):
    with open(os.path.join(out, name)) as f:
        body = f.read()
    check(printed not in body, "barrier: the probe value %s is not in %s" % (printed, name))
    check(re.search(r"acc\[3\]\[0\] = -?<redacted>", body) is not None,
          "barrier: the impl's print is redacted in " + name)
    for tok in re.findall(r"[-+]?\d+\.\d{5,}(?:[eE][-+]?\d+)?", body):
        v = abs(float(tok))
        if v and np.any(np.abs(vals - v) <= 1e-6 * v):
            check(False, "barrier: a reference probe value %s in %s" % (tok, name))

if fails:
    print("%d check(s) failed" % len(fails))
    sys.exit(1)
print("probes: all checks passed")
