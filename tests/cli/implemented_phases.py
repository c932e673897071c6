#!/usr/bin/env python3
"""`phasegate run --implemented-phases K` (CMake `PHASES k`): a phase after K is listed
but not implemented yet. Its run never touches the impl (no load probe, no process, no
call), prints one [SKIP] line per case and the [phasegate] SKIPPED marker, exits 77 and
writes the phase report with status SKIPPED, "not_implemented": true and every case's
modes SKIPPED with the reason. Phases up to K run as usual; K outside 1..N is an error.

usage: implemented_phases.py PHASEGATE OP_DIR MISSING_M3_PLUGIN GOOD_PLUGIN OUT_DIR
(MISSING_M3_PLUGIN exports the M1 and M2 wrappers of the op, not M3's.)"""
import json
import os
import shutil
import subprocess
import sys

pg, op, missing_m3, good, out = sys.argv[1:6]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def run(*args):
    p = subprocess.run([pg, "run", "--op-dir", op, *args], capture_output=True, text=True,
                       cwd=out, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def report(d, k):
    with open(os.path.join(out, d, "attention", "M%d" % k, "evaluation_report.json")) as f:
        return json.load(f)


cases = ["L1_canonical", "L2_basic", "L2_fp32"]
reason = "M3 not implemented yet (PHASES 2)"

# M3 of a plugin without attention_module123_wrapper, declared not implemented.
rc, so, se = run("--impl", "plugin:" + missing_m3, "--up-to-module", "3",
                 "--implemented-phases", "2", "--modes", "sim,npu", "--report-dir", "r")
check(rc == 77, "not implemented: exit 77 (got %d)\n%s%s" % (rc, so, se))
check(se == "", "not implemented: nothing on stderr: %r" % se)
want = ["[SKIP] attention M3 %s  %s: the impl was not called" % (c, reason) for c in cases]
check([l for l in so.splitlines() if l.startswith("[SKIP] ")] == want,
      "one [SKIP] line per case, not per mode:\n" + so)
check("[phasegate] SKIPPED attention M3: %s; 3 case(s) listed, not run\n" % reason in so,
      "the skip marker names the reason:\n" + so)
r = report("r", 3)
check(r["status"] == "SKIPPED" and r.get("not_implemented") is True,
      "report: status SKIPPED, not_implemented true: %s %s" % (r["status"], r.get("not_implemented")))
check(r["up_to_module"] == 3 and r["cases_total"] == 3 and r["cases_skipped"] == 3
      and r["cases_passed"] == 0 and r["first_failure"] is None,
      "report: 3 cases, all skipped, no failure")
check(r["per_mode_status"] == {"sim": "SKIPPED", "npu": "SKIPPED"},
      "report: per_mode_status %s" % r["per_mode_status"])
check([c["id"] for c in r["checks"]] == cases, "report: every case listed")
for c in r["checks"]:
    check(c["status"] == "SKIPPED" and c.get("not_implemented") is True
          and c["per_mode_status"] == {"sim": "SKIPPED", "npu": "SKIPPED"}
          and c["failure"] is None and c["per_tensor"] == []
          and [m["summary"] for m in c["modes"]] == [reason, reason]
          and all(m["failure_category"] is None for m in c["modes"]),
          "report: case %s SKIPPED in every mode with the reason: %s" % (c["id"], c["modes"]))

# The same run without the option: the plugin's missing wrapper is a structural ERROR,
# so the run above really never reached the plugin.
rc, so, se = run("--impl", "plugin:" + missing_m3, "--up-to-module", "3", "--case", "L2_basic",
                 "--report-dir", "r_all", "--no-bisect")
check(rc == 2 and "attention_module123_wrapper" in so + se and "structural" in so,
      "without --implemented-phases M3 is a structural failure (exit %d)" % rc)

# Phases up to K run as usual, and their report says nothing about it.
rc, so, se = run("--impl", "plugin:" + missing_m3, "--up-to-module", "2",
                 "--implemented-phases", "2", "--report-dir", "r")
check(rc == 0, "M2 <= K runs and passes (exit %d)\n%s%s" % (rc, so, se))
r2 = report("r", 2)
check(r2["status"] == "PASS" and "not_implemented" not in r2
      and all("not_implemented" not in c for c in r2["checks"]), "M2 report: a normal PASS")
rc, so, se = run("--impl", "plugin:" + good, "--up-to-module", "3", "--implemented-phases", "3",
                 "--case", "L2_basic", "--report-dir", "r3")
check(rc == 0 and "not implemented" not in so, "K = N: the last phase runs (exit %d)" % rc)

# Never touched: a plugin that does not exist, an exec command that would leave a file,
# a python: module that does not exist; with --jobs too.
for impl in ("plugin:nowhere.so", "exec:touch called", "python:nowhere.py"):
    rc, so, se = run("--impl", impl, "--up-to-module", "2", "--implemented-phases", "1",
                     "--report-dir", "r_none", "--jobs", "2")
    check(rc == 77 and se == "" and so.count("[SKIP] ") == 3,
          "%s at M2 with PHASES 1: skipped, untouched (exit %d)\n%s%s" % (impl, rc, so, se))
check(not os.path.exists(os.path.join(out, "called")), "the exec impl was never run")

# Bad values: one line on stderr, exit 2, nothing run, no report.
for args, needle in (
        (["--implemented-phases", "0"], "--implemented-phases: expected a phase number >= 1"),
        (["--implemented-phases", "x"], "--implemented-phases: expected a phase number >= 1"),
        (["--implemented-phases", "4"],
         "--implemented-phases 4 outside 1..3 for op 'attention'")):
    rc, so, se = run("--impl", "plugin:" + good, "--up-to-module", "1", "--report-dir", "r_bad",
                     *args)
    check(rc == 2 and len(se.splitlines()) == 1 and needle in se and so == "",
          "%s: exit 2 with one line (got %d): %s" % (" ".join(args), rc, se))
# A refused run replaces the phase's verdict with ERROR (the CLI's own usage errors,
# before the op is read, write nothing).
bad_report = os.path.join(out, "r_bad", "attention", "M1", "evaluation_report.json")
check(os.path.exists(bad_report) and json.load(open(bad_report))["status"] == "ERROR",
      "a refused run writes an ERROR report")

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
