"""Per-mode policy (`modes: {sim: {precision: false}}`, docs/diagnosis.md "Structure-only
modes"): a structure-only mode has its values compared and reported but not gating.

    mode_policy.py PHASEGATE FZ_OP_DIR SIM_ONLY_SO NPU_ONLY_SO OUTDIR

The fault-zoo attention op is copied with a policy in the contract, the suite or one case;
the sim_only plugin (sim values off by 1.5x + 0.25 at M3) then passes with its metrics in
the report and "values not gating" on the console; without the policy it fails; npu keeps
gating; a bad policy value is a validate error naming file:line:col.
"""
import json
import os
import shutil
import subprocess
import sys

pg, fz_op, sim_only, npu_only, out = sys.argv[1:6]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)


def op_dir(name, contract_extra="", suite=None):
    d = os.path.join(out, name)
    os.makedirs(d)
    with open(os.path.join(fz_op, "module_interfaces.yaml")) as f:
        text = f.read()
    with open(os.path.join(d, "module_interfaces.yaml"), "w") as f:
        f.write(text + contract_extra)
    if suite is None:
        shutil.copy(os.path.join(fz_op, "adversarial_suite.json"), d)
    else:
        with open(os.path.join(d, "adversarial_suite.json"), "w") as f:
            json.dump(suite, f, indent=1)
    return d


def run(d, impl, modes="sim,npu", case="L2_basic"):
    rep = os.path.join(d, "report.json")
    p = subprocess.run([pg, "run", "--op-dir", d, "--impl", "plugin:" + impl, "--up-to-module",
                        "3", "--modes", modes, "--case", case, "--report", rep,
                        "--no-golden-cache"], capture_output=True, text=True)
    print(p.stdout + p.stderr)
    with open(rep) as f:
        return p.returncode, p.stdout + p.stderr, json.load(f)


def mode_entry(report, mode):
    return next(m for m in report["checks"][0]["modes"] if m["mode"] == mode)


def sim_tensor(report):
    return next(t for t in report["checks"][0]["per_tensor"] if t["mode"] == "sim")


base_suite = {"op": "attention", "total_modules": 3,
              "cases": [{"id": "L2_basic", "level": 2, "seed": 7}]}

# 1. the contract's policy: sim's wrong values do not gate, are still measured
d = op_dir("contract_policy", "\nmodes: {sim: {precision: false}}\n")
rc, console, rep = run(d, sim_only)
check(rc == 0, "contract policy: exit 0 (got %d)" % rc)
check(rep["status"] == "PASS", "contract policy: status PASS")
check(rep["per_mode_status"] == {"sim": "PASS", "npu": "PASS"}, "contract policy: both PASS")
sim = mode_entry(rep, "sim")
check(sim["precision_gating"] is False, "sim precision_gating false")
check(sim.get("precision_policy") == "contract", "sim precision_policy contract")
check(mode_entry(rep, "npu")["precision_gating"] is True, "npu precision_gating true")
t = sim_tensor(rep)
check(t["values_checked"] is False and t["passed"] is True, "sim tensor: not gating, passed")
check(t.get("mismatches", 0) > 0 and t.get("all_close") is False and t["max_abs_diff"] > 0.1,
      "sim tensor: the metrics of the wrong values are reported")
check("values not gating (contract policy)" in console, "console says values not gating")

# 2. the same without the policy fails
d = op_dir("no_policy")
rc, console, rep = run(d, sim_only)
check(rc == 1 and rep["per_mode_status"]["sim"] == "FAIL", "no policy: sim FAIL, exit 1")
check(mode_entry(rep, "sim")["precision_gating"] is True, "no policy: precision_gating true")
check("precision_policy" not in mode_entry(rep, "sim"), "no policy: no precision_policy")

# 3. npu still gates when only sim is structure-only
d = op_dir("npu_gates", "\nmodes: {sim: {precision: false}}\n")
rc, console, rep = run(d, npu_only)
check(rc == 1 and rep["per_mode_status"]["npu"] == "FAIL", "npu_only: npu still FAIL")

# 4. the suite's policy, and a case's own policy winning over the contract's
suite = dict(base_suite, modes={"sim": {"precision": False}, "cuda": {"precision": False}})
d = op_dir("suite_policy", "", suite)
rc, console, rep = run(d, sim_only)
check(rc == 0 and mode_entry(rep, "sim").get("precision_policy") == "suite",
      "suite policy: PASS from the suite (a policy for an unrequested mode is harmless)")
suite = {"op": "attention", "total_modules": 3,
         "cases": [{"id": "L2_basic", "level": 2, "seed": 7, "modes": {"sim": {"precision": True}}}]}
d = op_dir("case_policy", "\nmodes: {sim: {precision: false}}\n", suite)
rc, console, rep = run(d, sim_only)
check(rc == 1 and rep["per_mode_status"]["sim"] == "FAIL",
      "a case's precision: true beats the contract's policy")
check(mode_entry(rep, "sim").get("precision_policy") == "case", "case policy named")

# 5. validation: a bad value is an error at its position, an unknown key a warning
def validate(d):
    p = subprocess.run([pg, "validate", "--op-dir", d], capture_output=True, text=True)
    print(p.stdout + p.stderr)
    return p.returncode, p.stdout + p.stderr


d = op_dir("bad_contract", "\nmodes:\n  sim: {precision: maybe}\n")
rc, text = validate(d)
check(rc == 2 and "module_interfaces.yaml:" in text and "precision of mode 'sim'" in text
      and "must be true or false" in text, "contract: precision maybe is an error")
d = op_dir("bad_contract_kind", "\nmodes: [sim]\n")
rc, text = validate(d)
check(rc == 2 and "'modes'" in text, "contract: modes as a list is an error")
d = op_dir("bad_suite", "", dict(base_suite, modes={"sim": {"precision": "no"}}))
rc, text = validate(d)
check(rc == 2 and "adversarial_suite.json:" in text and "modes.sim.precision" in text,
      "suite: precision \"no\" is an error")
d = op_dir("bad_case", "", {"op": "attention", "total_modules": 3, "cases": [
    {"id": "L2_basic", "level": 2, "modes": {"sim": {"precision": 0}}}]})
rc, text = validate(d)
check(rc == 2 and "cases[0].modes.sim.precision" in text, "case: precision 0 is an error")
d = op_dir("unknown_key", "\nmodes: {sim: {precision: false, gate: soft}}\n",
           dict(base_suite, modes={"npu": {"precisoin": False}}))
rc, text = validate(d)
check(rc == 0 and "warning" in text and "'gate'" in text and "precisoin" in text,
      "unknown keys under a mode are warnings")

if fails:
    print("%d check(s) failed" % len(fails))
    sys.exit(1)
print("mode_policy: all checks passed")
