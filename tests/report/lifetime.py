"""report/lifetime: one run, one verdict (docs/runner.md "One run, one verdict").

A buggy run, the fixed impl, a subset run, a refused run, a --jobs run and a second
registration of the same op directory, each through `phasegate run` on the fault zoo's
attention op. After every step: the exit code is the report's status, the counts cover
that run's cases only, first_failure belongs to that run, the previous report is in
history/, and the provenance (run id, host, device, times) is there.

    lifetime.py PHASEGATE OP_DIR BUGGY_PLUGIN GOOD_PLUGIN WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

pg, op_dir, buggy, good, work = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
failures = []
STATUS = {0: "PASS", 1: "FAIL", 2: "ERROR", 77: "SKIPPED"}
suite = json.load(open(os.path.join(op_dir, "adversarial_suite.json")))
ALL = [c["id"] for c in suite["cases"]]
L2 = [c["id"] for c in suite["cases"] if c["level"] == 2]


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def run(*args, op=op_dir):
    p = subprocess.run([pg, "run", "--op-dir", op, "--up-to-module", "1", "--modes", "sim,npu",
                        "--report-dir", "reports", *args],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def report(name="attention"):
    return json.load(open(os.path.join("reports", name, "M1", "evaluation_report.json")))


def history(name="attention"):
    d = os.path.join("reports", name, "M1", "history")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def agrees(step, rc, out, cases, name="attention"):
    """The report is this run's: status = exit code, counts = these cases."""
    r = report(name)
    check(STATUS.get(rc) == r["status"], f"{step}: exit {rc} and status {r['status']}\n{out}")
    ids = [c["id"] for c in r["checks"]]
    check(sorted(ids) == sorted(cases), f"{step}: the report holds {ids}, the run ran {cases}")
    check(r["cases_total"] == len(cases), f"{step}: cases_total {r['cases_total']}")
    passed = sum(c["status"] == "PASS" for c in r["checks"])
    failed = sum(c["status"] == "FAIL" for c in r["checks"])
    check(r["cases_passed"] == passed and r["cases_failed"] == failed,
          f"{step}: counts {r['cases_passed']} passed / {r['cases_failed']} failed")
    ff = r["first_failure"]
    check((ff is None) == (r["status"] in ("PASS", "SKIPPED")),
          f"{step}: first_failure {ff} with status {r['status']}")
    check(r["selection"]["cases"] == ids and r["selection"]["complete"] == (len(cases) == len(ALL)),
          f"{step}: selection {r['selection']}")
    run_ = r["run"]
    check(run_["id"] and run_["host"] and run_["device"]["kind"] and "index" in run_["device"]
          and run_["started_at"] <= run_["ended_at"], f"{step}: provenance {run_}")
    for c in r["checks"]:
        check(c["run"]["id"] == run_["id"] and c["run"]["host"] == run_["host"],
              f"{step}: case {c['id']} run {c['run']}")
    # the plugin names its npu device (pg_call_device_name); sim says nothing, and the
    # case's name is the first a mode said
    named = [c for c in r["checks"] if c["run"]["device"]["name"] == "faultzoo npu 0"]
    check(len(named) == len(r["checks"]) and
          (run_["device"]["name"] == "faultzoo npu 0" or not r["checks"]),
          f"{step}: device names {run_['device']} / {[c['run']['device'] for c in r['checks']]}")
    return r


# 1. the buggy impl fails every precision-checked case
rc, out = run("--impl", "plugin:" + buggy)
r1 = agrees("buggy run", rc, out, ALL)
check(rc == 1 and r1["cases_failed"] == len(L2), f"buggy run: exit {rc}, {r1['cases_failed']} failed")

# 2. the fix, on a subset: only L1, PASS, no old failure left, the old report kept
rc, out = run("--impl", "plugin:" + good, "--levels", "L1")
r2 = agrees("fixed subset run", rc, out, [c for c in ALL if c.startswith("L1")])
check(rc == 0 and r2["selection"]["levels"] == [1], f"subset: exit {rc}, {r2['selection']}")
check(len(history()) == 1, f"one report in history/ after the second run: {history()}")
old = json.load(open(os.path.join("reports", "attention", "M1", "history", history()[0])))
check(old["status"] == "FAIL" and old["run"]["id"] == r1["run"]["id"],
      "history/ holds the buggy run's report, as it was")

# 3. a refused run (a broken contract) replaces the verdict with ERROR and its findings
broken = os.path.join(work, "broken")
shutil.copytree(op_dir, broken)
contract = os.path.join(broken, "module_interfaces.yaml")
text = open(contract).read()
open(contract, "w").write(text.replace("source: primary", "source: module_9", 1))
rc, out = run("--impl", "plugin:" + good, op=broken)
r3 = agrees("refused run", rc, out, [])
check(rc == 2 and r3["first_failure"]["failure_category"] == "structural",
      f"refused: exit {rc}, {r3['first_failure']}")
check(any(f["line"] > 0 and "module_9" in f["message"] for f in r3.get("findings", [])),
      f"refused: findings with a position: {r3.get('findings')}")
check(len(history()) == 2, f"two reports in history/: {history()}")

# 4. --jobs: the workers' writes join one run (and a forked call names its device too)
rc, out = run("--impl", "plugin:" + good, "--jobs", "2")
agrees("--jobs 2 run", rc, out, ALL)
rc, out = run("--impl", "plugin:" + good, "--fresh-process", "--levels", "L1")
agrees("--fresh-process run", rc, out, [c for c in ALL if c.startswith("L1")])

# 5. a second registration of the same op directory never shares the report
rc, out = run("--impl", "plugin:" + buggy, "--report-name", "attention_other")
agrees("second registration", rc, out, ALL, name="attention_other")
check(report("attention_other")["registration"] == "attention_other" and
      report()["status"] == "PASS", "each registration keeps its own verdict")
# ... and the HTML page shows both, each under its own name
p = subprocess.run([pg, "report", "--out", "page.html", "reports"], stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT, text=True)
page = open("page.html").read() if os.path.exists("page.html") else ""
check(p.returncode in (0, 1) and "attention_other (op attention)" in page
      and "<th rowspan" in page and page.count(">attention_other<") >= 1,
      f"the page shows both registrations (exit {p.returncode}): {p.stdout[-300:]}")

# 6. the history keeps the newest five
for _ in range(5):
    run("--impl", "plugin:" + good, "--levels", "L1")
check(len(history()) == 5, f"history/ keeps five: {history()}")

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
