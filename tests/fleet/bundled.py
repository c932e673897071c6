"""fleet/bundled, fleet/bundled_full: the bundled ops' tests (label LABEL) as 4 local
shards, merged, against one local ctest run of the same tests in the same build: the
same verdict for every test, and the same status for every case of every phase report
(docs/fleet.md "Tests").

    bundled.py PHASEGATE BUILD_DIR LABEL WORK_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

pg, build, label, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def run(args):
    env = {k: v for k, v in os.environ.items() if k != "PHASEGATE_REPORT_ROOT"}
    t0 = time.time()
    p = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout, time.time() - t0


def verdicts(junit):
    out = {}
    for m in re.finditer(r'<testcase name="([^"]*)"[^>]*status="([a-z]*)"[^>]*>(.*?)</testcase>',
                         open(junit).read(), re.S):
        name, status, body = m.groups()
        out.setdefault(name, []).append("p" if status == "run" else "f" if status == "fail" else
                                        "s" if 'message="SKIP_' in body else "n")
    return out


def case_statuses(root):
    """(registration, phase, case id) -> status of every report under root."""
    out = {}
    for dp, _, files in os.walk(root):
        if "evaluation_report.json" in files and "history" not in dp:
            try:
                r = json.load(open(os.path.join(dp, "evaluation_report.json")))
            except ValueError:
                continue
            if not isinstance(r, dict) or "op_name" not in r or "up_to_module" not in r:
                continue
            for c in r.get("checks", []):
                out[(r.get("registration") or r["op_name"], r["up_to_module"], c["id"])] = c["status"]
    return out


single_xml = os.path.join(work, "single.xml")
rc, out, t_single = run(["ctest", "--test-dir", build, "-L", f"^{label}$", "-j2", "--output-junit", single_xml])
single = verdicts(single_xml)
check(single, f"one local run: {len(single)} tests in {t_single:.1f} s, exit {rc}")
plan = os.path.join(work, "plan")
rc, out, _ = run([pg, "shard", "plan", "--build-dir", build, "--shards", "4", "--label", label, "--out", plan])
check(rc == 0, "shard plan\n" + out)
t_shards = 0
dirs = []
for k in range(4):
    d = os.path.join(work, f"s{k}")
    rc, out, t = run([pg, "shard", "run", "--plan", os.path.join(plan, "plan.json"), "--index", str(k),
                      "--out", d, "-j2"])
    t_shards += t
    dirs.append(d)
    check(os.path.exists(os.path.join(d, "manifest.json")), f"shard {k}: exit {rc} in {t:.1f} s\n{out[-2000:]}")
merged_dir = os.path.join(work, "M")
rc, out, _ = run([pg, "merge", "--plan", os.path.join(plan, "plan.json"), "--out", merged_dir, *dirs])
print(out)
merged = verdicts(os.path.join(merged_dir, "junit.xml"))
check(all(len(v) == 1 for v in merged.values()), "each test once in the merged JUnit file")
check({k: v[0] for k, v in merged.items()} == {k: v[0] for k, v in single.items()},
      f"merged verdicts = one local run's ({len(merged)} tests)\n merged {merged}\n single {single}")
want = 0 if all(v == ["p"] or v == ["s"] for v in single.values()) else 1
check(rc == want, f"merge exit {rc} (one run's: {want})")
ops = {n.split("/")[0] for n in single}
m_cases = {k: v for k, v in case_statuses(os.path.join(merged_dir, "reports")).items() if k[0] in ops}
# the ops' report directories: the --report-dir of their case tests' commands
listing = json.loads(subprocess.run(["ctest", "--test-dir", build, "-L", f"^{label}$", "--show-only=json-v1"],
                                    stdout=subprocess.PIPE, text=True).stdout)
report_dirs = {t["command"][t["command"].index("--report-dir") + 1] for t in listing["tests"]
               if "--report-dir" in t.get("command", [])}
s_cases = {}
for d in sorted(report_dirs):
    s_cases.update({k: v for k, v in case_statuses(d).items() if k[0] in ops})
check(m_cases and m_cases == s_cases,
      f"every case of every phase report: the same status ({len(m_cases)} cases)\n {m_cases}\n {s_cases}")
print(f"timing: one local run {t_single:.1f} s, 4 shards one after another {t_shards:.1f} s")
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("fleet/bundled: all checks passed")
