"""The pypto workflow's inspection protocol (docs/pypto.md "Inspection probes"): a
pypto-layout op (tests/run/inspection/pypto_op/custom/scan_acc) whose phase-1 golden file
has the companion module_1_inspect returning {"h": [B, H, NT, D]}; the torch impl takes
the probe buffer as the keyword inspection_h.

    pypto_probes.py PHASEGATE OP_DIR PYTHON OUTDIR

- a default run calls neither the companion nor the impl with a buffer, and its report
  has no inspection;
- --inspect h calls both, writes checks[].inspection.per_iter (axis 2) and, for an impl
  whose state drifts from iteration 2, first_failure.drift_onset_iter = 2; a correct impl
  has no drift (null);
- a malformed companion (a parameter too many; a probe with two axes; no such probe) and an impl that does not take the buffer are clear errors naming the file and
  the function; --inspect of a name no file knows says where module_1_inspect was looked for.
"""
import json
import os
import shutil
import subprocess
import sys

pg, op_src, python, out = sys.argv[1:5]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
fails = []
trace = os.path.join(out, "trace.txt")


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)


def run(name, op, impl, extra=()):
    rep = os.path.join(out, name + ".json")
    if os.path.exists(trace):
        os.remove(trace)
    args = [pg, "run", "--op-dir", op, "--impl", impl, "--up-to-module", "1", "--modes", "cpu",
            "--report", rep, "--no-golden-cache", "--python", python] + list(extra)
    env = dict(os.environ, SCAN_ACC_TRACE=trace)
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    text = p.stdout + p.stderr
    print("$ " + " ".join(args) + "\n" + text)
    rep_json = None
    if os.path.exists(rep):
        with open(rep) as f:
            rep_json = json.load(f)
    calls = open(trace).read().split("\n") if os.path.exists(trace) else []
    return p.returncode, text, rep_json, [c for c in calls if c]


impl_file = os.path.join(op_src, "modules", "scan_acc_module1_impl.py")
golden_file = os.path.join(op_src, "modules", "scan_acc_module1_golden.py")
correct = "python:" + impl_file
drift = "python:%s::drift_wrapper" % impl_file

# 1. default run: cheap, no probes anywhere
rc, text, rep, calls = run("default", op_src, drift)
check(rc == 1, "default drifting run: exit 1 (%d)" % rc)
check("golden module_1_inspect" not in calls, "default run calls no companion: %s" % calls)
check(calls.count("impl kwargs=none") == 2 and "impl kwargs=inspection_h" not in calls,
      "default run passes no probe buffer: %s" % calls)
check(rep and all("inspection" not in c for c in rep["checks"]),
      "default report has no inspection")
check(rep and "drift_onset_iter" not in rep["first_failure"],
      "default first_failure has no drift_onset_iter")

# 2. --inspect h on the drifting impl: per_iter along axis 2, drift from iteration 2
rc, text, rep, calls = run("drift", op_src, drift, ["--inspect", "h"])
check(rc == 1, "drifting run with --inspect: exit 1 (%d)" % rc)
check(calls.count("golden module_1_inspect") == 2, "companion once per case: %s" % calls)
check(calls.count("impl kwargs=inspection_h") == 2, "impl got inspection_h: %s" % calls)
if rep:
    for c in rep["checks"]:
        ins = c.get("inspection")
        check(isinstance(ins, dict) and ins.get("protocol") == "pypto" and ins.get("axis") == 2,
              "%s: inspection is the workflow's object: %s" % (c["id"], ins))
        if not isinstance(ins, dict):
            continue
        per = ins.get("per_iter", [])
        nt = {"L2_small": 4, "L2_long": 6}[c["id"]]
        check(len(per) == nt and ins.get("iterations") == nt,
              "%s: %d iterations in per_iter (%d)" % (c["id"], nt, len(per)))
        check([p["iter"] for p in per] == list(range(len(per))), "per_iter numbered")
        check([p["all_close"] for p in per] == [True, True] + [False] * (nt - 2),
              "%s: all_close per iteration: %s" % (c["id"], [p["all_close"] for p in per]))
        check(all(set(p) >= {"iter", "max_abs_diff", "max_rel_diff", "all_close"} for p in per),
              "per_iter has the workflow's keys")
        check(ins.get("drift_onset_iter") == 2, "%s: drift_onset_iter 2" % c["id"])
        check(c["failure"].get("drift_onset_iter") == 2, "%s: failure.drift_onset_iter" % c["id"])
    ff = rep["first_failure"]
    check(ff.get("drift_onset_iter") == 2 and ff.get("drift_probe") == "h",
          "first_failure.drift_onset_iter 2 (%s)" % ff)
check("inspection h: drifts from iteration 2 of 4" in text, "console names the onset")
check("iter 2: mismatches 16 of 16" in text, "--inspect h prints every iteration")

# 3. --inspect h on the correct impl: per_iter all close, no drift
rc, text, rep, calls = run("correct", op_src, correct, ["--inspect", "inspection_h", "--case",
                                                        "L2_long"])
check(rc == 0, "correct impl with --inspect: exit 0 (%d)" % rc)
if rep:
    ins = rep["checks"][0].get("inspection", {})
    check(isinstance(ins, dict) and ins.get("drift_onset_iter") is None and
          all(p["all_close"] for p in ins.get("per_iter", [None])),
          "correct impl: every iteration close, no onset: %s" % ins)

# 4. malformed companions, each in a copy of the op whose golden file is changed
BAD = {
    "signature": ("def module_1_inspect(x):", "def module_1_inspect(x, chunk_size):",
                  "cannot be called with the primary inputs (x)"),
    "two_axes": ('return {"h": torch.cumsum(x.reshape(b, h, t // CHUNK, CHUNK, d).sum(dim=3), '
                 'dim=2)}', 'return {"h": x[0, 0]}', "needs at least 3 axes"),
    "no_probe": ('{"h": torch', '{"g": torch', "returns no probe 'h' (its probes: g)"),
}
for name, (old, new, says) in BAD.items():
    op = os.path.join(out, "op_" + name)
    shutil.copytree(op_src, op)
    gf = os.path.join(op, "modules", "scan_acc_module1_golden.py")
    src = open(gf).read()
    check(old in src, "%s: the test's edit applies" % name)
    open(gf, "w").write(src.replace(old, new))
    rc, text, rep, calls = run("bad_" + name, op, "python:" + os.path.join(
        op, "modules", "scan_acc_module1_impl.py"), ["--inspect", "h", "--case", "L2_small"])
    check(rc == 2, "%s: the run is an ERROR, exit 2 (%d)" % (name, rc))
    check(says in text, "%s: says %r" % (name, says))
    check(os.path.realpath(gf) + "::module_1_inspect" in text or
          gf + "::module_1_inspect" in text, "%s: names file and function" % name)
    check("impl kwargs" not in " ".join(calls), "%s: the impl is not called" % name)

# 5. an impl that does not take the probe buffer: a structural failure naming it
rc, text, rep, calls = run("no_kwargs", op_src, "python:%s::no_kwargs_wrapper" % impl_file,
                           ["--inspect", "h", "--case", "L2_small"])
check(rc == 1, "impl without the keyword: FAIL (%d)" % rc)
check("no_kwargs_wrapper" in text and "inspection_h" in text and "impl.py" in text,
      "impl without the keyword: names file, function and buffer")
check(rep and rep["first_failure"].get("failure_category") == "structural",
      "impl without the keyword: structural")

# 6. a name no file knows: the error says where module_1_inspect was looked for
op = os.path.join(out, "op_no_companion")
shutil.copytree(op_src, op)
gf = os.path.join(op, "modules", "scan_acc_module1_golden.py")
open(gf, "w").write(open(gf).read().replace("def module_1_inspect(", "def other_inspect("))
rc, text, rep, calls = run("no_companion", op, correct, ["--inspect", "h"])
check(rc == 2 and "defines no module_1_inspect" in text,
      "no companion: --inspect h is an error naming module_1_inspect")

print("%d failure(s)" % len(fails))
sys.exit(1 if fails else 0)
