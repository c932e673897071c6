"""fleet/shard_merge: `phasegate shard plan`, `shard run` and `merge` on a small project
registered the way phasegate_add_op registers ops (mini/CMakeLists.txt), against one
local ctest run of the same project (docs/fleet.md).

Checks: the plan (roles, each planned test on one shard, the fixture tests a shard
needs, no gate on a shard, -I files, deterministic); shard indexes from the flag and
the schedulers' variables; the resource spec from CUDA_VISIBLE_DEVICES; each shard's
reports in its own root (the build tree's untouched); exit codes = ctest's; the merge
gives the single run's verdict for every test (gates judged on the merged result), in
one JUnit file with a suite per shard and the report tree `phasegate report` reads;
a missing shard, a conflicting retry and a fingerprint mismatch (exit codes and
markings); a --by-op plan.

    shard_merge.py PHASEGATE SOURCE_ROOT OP_DIR GOOD_PLUGIN BAD_PLUGIN WORK_DIR
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys

pg, root, op_dir, good, bad, work = sys.argv[1:7]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
failures = []
socket_host = socket.gethostname()
B = os.path.join(work, "build")
FLAG = os.path.join(work, "flaky.flag")
IMPL = os.path.join(work, "impl.so")


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def sh(args, env=None, **kw):
    e = dict(os.environ)
    for k in ("SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "TEST_SHARD_INDEX", "GTEST_SHARD_INDEX",
              "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES",
              "PHASEGATE_REPORT_ROOT"):
        e.pop(k, None)
    e.update(env or {})
    p = subprocess.run(args, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    return p.returncode, p.stdout


def impl(path):
    if os.path.lexists(IMPL):
        os.unlink(IMPL)
    os.symlink(path, IMPL)


def configure(extra="OFF"):
    rc, out = sh(["cmake", "-S", os.path.join(root, "tests/fleet/mini"), "-B", B, f"-DPG={pg}",
                  f"-DOP_DIR={op_dir}", f"-DIMPL={IMPL}", f"-DFLAG={FLAG}", f"-DEXTRA={extra}",
                  f"-DSESSION_SCRIPT={root}/cmake/PhaseGateSession.cmake"])
    check(rc == 0, "configure the mini project\n" + out)


def verdicts(junit):
    """name -> p/f/s/n, read the way the verify targets' summary reads ctest's JUnit."""
    out = {}
    for m in re.finditer(r'<testcase name="([^"]*)"[^>]*status="([a-z]*)"[^>]*>(.*?)</testcase>',
                         open(junit).read(), re.S):
        name, status, body = m.groups()
        r = "p" if status == "run" else "f" if status == "fail" else \
            "s" if 'message="SKIP_' in body else "n"
        out.setdefault(name, []).append(r)
    return out


impl(good)
open(FLAG, "w").close()
configure()

# one local run: the reference (beta's flaky case fails, so beta/M1/gate and M2 do not run)
rc, out = sh(["ctest", "--test-dir", B, "--output-junit", os.path.join(work, "single.xml")])
single = {k: v[0] for k, v in verdicts(os.path.join(work, "single.xml")).items()}
check(rc != 0 and single.get("beta/M1/L1/flaky") == "f" and single.get("beta/M2/L1/c1") == "n"
      and single.get("beta/M1/gate") == "n" and single.get("alpha/M2/L1/L2_basic") == "p",
      f"single run: exit {rc}, {single}")

# ---- the plan
rc, out = sh([pg, "shard", "plan", "--build-dir", B, "--shards", "3", "--out", "plan"])
check(rc == 0, "shard plan\n" + out)
plan = json.load(open("plan/plan.json"))
rc2, _ = sh([pg, "shard", "plan", "--build-dir", B, "--shards", "3", "--out", "plan2"])
check(open("plan/plan.json").read() == open("plan2/plan.json").read(), "the plan is deterministic")
roles = {t["name"]: t["role"] for t in plan["tests"]}
check(roles["alpha/M1/gate"] == "gate" and roles["alpha/contract"] == "fixture"
      and roles["alpha/report/session"] == "fixture" and roles["alpha/M2/L1/L2_fp32"] == "case"
      and roles["fleet/mini/other"] == "case", f"roles {roles}")
shards = plan["shards"]
check(len(shards) == 3 and plan["gates"] == "merged", "3 shards, gates judged on the merged result")
placed = [n for s in shards for n in s["names"] if roles[n] == "case"]
cases = [n for n, r in roles.items() if r == "case"]
check(sorted(placed) == sorted(cases), f"every case test on exactly one shard: {placed}")
for s in shards:
    names = s["names"]
    check(not any(roles[n] == "gate" for n in names), f"shard {s['index']}: no gate")
    for op in ("alpha", "beta"):
        if any(n.startswith(op + "/M") for n in names):
            check(f"{op}/report/session" in names, f"shard {s['index']}: {op}'s report session with its cases")
    nums = open(f"plan/shard-{s['index']}.ctest-I").read().strip()
    check(nums == "0,0,0," + ",".join(str(n) for n in s["numbers"]), f"shard {s['index']}: -I file {nums}")
    check(open(f"plan/shard-{s['index']}.tests").read().split("\n")[:-1] == names,
          f"shard {s['index']}: --tests-from-file file")
    # ctest itself runs exactly these tests with the plan's -FA
    rc, out = sh(["ctest", "--test-dir", B, "-N", "-I", os.path.join(work, f"plan/shard-{s['index']}.ctest-I"),
                  "-FA", ".*"])
    listed = re.findall(r"Test +#\d+: (\S+)", out)
    check(listed == names, f"shard {s['index']}: ctest -N lists {listed}")

# ---- balancing and the times' order on a synthetic listing (--tests-json)
os.makedirs("fake/Testing/Temporary")
names = [f"t{i}" for i in range(8)]
json.dump({"kind": "ctestInfo", "version": {"major": 1, "minor": 0}, "tests": [{"name": n} for n in names]},
          open("listing.json", "w"))
json.dump({"tests": {"t0": 7, "t1": 6, "t2": 5}}, open("times.json", "w"))  # the best source
open("junit_times.xml", "w").write("".join(
    f'<testcase name="{n}" time="{t}" status="run"><system-out/></testcase>\n'
    for n, t in (("t0", 99), ("t3", 4), ("t4", 3), ("t7", 50))) .replace("t7", "t7x"))
open("fake/Testing/Temporary/CTestCostData.txt", "w").write("t3 1 77\nt5 2 2\nt7x 1 1\n---\n")
rc, out = sh([pg, "shard", "plan", "--build-dir", "fake", "--tests-json", "listing.json", "--times", "times.json",
              "--times", "junit_times.xml", "--shards", "2", "--out", "plan_lpt"])
pl = json.load(open("plan_lpt/plan.json"))
secs = {t["name"]: t["seconds"] for t in pl["tests"]}
check(rc == 0 and secs == {"t0": 7, "t1": 6, "t2": 5, "t3": 4, "t4": 3, "t5": 2, "t6": 4.5, "t7": 4.5},
      f"times: times.json, then JUnit, then CTestCostData; unknown = the median: {secs}\n{out}")
# longest first onto the least loaded, ties to the lower test number and shard index:
# t0 7 -> 0 (7), t1 6 -> 1 (6), t2 5 -> 1 (11), t6 4.5 -> 0 (11.5), t7 4.5 -> 1 (15.5),
# t3 4 -> 0 (15.5), t4 3 -> 0 (a tie: the lower index, 18.5), t5 2 -> 1 (17.5)
check([s_["names"] for s_ in pl["shards"]] == [["t0", "t3", "t4", "t6"], ["t1", "t2", "t5", "t7"]]
      and [s_["predicted_seconds"] for s_ in pl["shards"]] == [18.5, 17.5], f"LPT: {pl['shards']}")

# ---- the shards: the index from the flag and from the schedulers' variables
before = {p: os.path.getmtime(os.path.join(dp, p)) for dp, _, fs in os.walk(os.path.join(B, "phasegate-reports"))
          for p in fs}
runs = [({}, ["--index", "0"]), ({"SLURM_ARRAY_TASK_ID": "1"}, []),
        ({"JOB_COMPLETION_INDEX": "2", "CUDA_VISIBLE_DEVICES": "3,5"}, [])]
shard_rc = {}
for k, (env, extra) in enumerate(runs):
    rc, out = sh([pg, "shard", "run", "--plan", "plan/plan.json", "--out", f"s{k}", *extra], env=env)
    m = json.load(open(f"s{k}/manifest.json"))
    shard_rc[k] = rc
    check(m["shard"] == k and m["ctest_exit_code"] == rc and m["fingerprint"] == plan["fingerprint"]
          and m["host"] and m["started_at"] <= m["ended_at"] and m["status"] == "ran",
          f"shard {k}: exit {rc}, manifest {m}\n{out}")
    holds_flaky = "beta/M1/L1/flaky" in shards[k]["names"]
    check((rc != 0) == holds_flaky, f"shard {k}: exit {rc} is ctest's (flaky here: {holds_flaky})")
m2 = json.load(open("s2/manifest.json"))
spec = json.load(open("s2/resources.json"))
check(m2["devices"] == {"kind": "gpus", "from": "CUDA_VISIBLE_DEVICES", "visible": ["3", "5"]}
      and spec["local"][0]["gpus"] == [{"id": "0", "slots": 1}, {"id": "1", "slots": 1}]
      and "--resource-spec-file" in m2["ctest_command"], f"resource spec {spec}, devices {m2['devices']}")
check(not os.path.exists("s0/resources.json"), "no resource spec without visible devices")
after = {p: os.path.getmtime(os.path.join(dp, p)) for dp, _, fs in os.walk(os.path.join(B, "phasegate-reports"))
         for p in fs}
check(before == after, "the shards never wrote into the build tree's reports")
alpha_shards = [k for k in range(3) if any(n.startswith("alpha/M") for n in shards[k]["names"])]
check(all(os.path.exists(f"s{k}/reports/alpha/.session") for k in alpha_shards), "each shard's own session")
rc, out = sh([pg, "shard", "run", "--plan", "plan/plan.json", "--out", "sx"])
check(rc == 2 and "no shard index" in out, f"no index: exit {rc}\n{out}")
rc, out = sh([pg, "shard", "run", "--plan", "plan/plan.json", "--out", "sx"], env={"TEST_SHARD_INDEX": "7"})
check(rc == 2 and "outside the plan's 3 shards" in out, f"index 7 of 3: exit {rc}\n{out}")

# ---- the merge: the single run's verdicts
rc, out = sh([pg, "merge", "--plan", "plan/plan.json", "--out", "M", "s0", "s1", "s2"])
check(rc == 1, f"merge with a failure: exit {rc}\n{out}")
merged = verdicts("M/junit.xml")
check(all(len(v) == 1 for v in merged.values()), f"each test once in the merged JUnit: {merged}")
merged = {k: v[0] for k, v in merged.items()}
check(merged == single, f"merged verdicts = one local run's\n merged {merged}\n single {single}")
xml = open("M/junit.xml").read()
check(xml.count("<testsuite ") == 4 and xml.count('hostname=""') == 0 and "<testsuites" in xml,
      "one <testsuites>, a suite per shard and the merge's, hostname set")
rep = json.load(open("M/reports/alpha/M1/evaluation_report.json"))
check(sorted(c["id"] for c in rep["checks"]) == ["L1_canonical", "L2_basic", "L2_fp32"]
      and rep["status"] == "PASS" and rep["selection"]["complete"] and rep["registration"] == "alpha",
      f"merged report: {rep['status']}, {[c['id'] for c in rep['checks']]}")
check(len({c["run"]["id"] for c in rep["checks"]}) >= 1 and all(c["run"]["host"] for c in rep["checks"]),
      "each case keeps its run and host")
rc, out = sh([pg, "report", "--out", "M/page.html", "M/reports"])
check(rc == 0 and os.path.exists("M/report.html"), f"phasegate report on the merged tree: {out}")
times = json.load(open("M/times.json"))["tests"]
check("alpha/M1/L1/L2_basic" in times and "alpha/M1/gate" not in times, f"times.json for the next plan: {times}")
times["alpha/M1/L1/L2_basic"] = 123.0  # the merge's times come before ctest's cost data
json.dump({"tests": times}, open("M/times.json", "w"))
rc, out = sh([pg, "shard", "plan", "--build-dir", B, "--shards", "3", "--times", "M", "--out", "plan3"])
p3 = {t["name"]: t for t in json.load(open("plan3/plan.json"))["tests"]}
big = next(s for s in json.load(open("plan3/plan.json"))["shards"] if "alpha/M1/L1/L2_basic" in s["names"])
check(rc == 0 and p3["alpha/M1/L1/L2_basic"]["seconds"] == 123.0 and p3["alpha/M1/L1/L2_basic"]["recorded"]
      and [n for n in big["names"] if json.load(open("plan3/plan.json")) and p3[n]["role"] == "case"]
      == ["alpha/M1/L1/L2_basic"], f"plan from the merge's times: the long test alone on its shard\n{out}")
rc, out = sh([pg, "merge", "--out", "M_noplan", "s0", "s1", "s2"])
check(rc == 1, f"merge without a plan: exit {rc}\n{out}")

# ---- bad inputs: one line naming the file, exit 2
open("bad.json", "w").write("{not json")
rc, out = sh([pg, "shard", "plan", "--build-dir", B, "--shards", "2", "--tests-json", "bad.json", "--out", "pb"])
check(rc == 2 and "bad.json: not a ctest --show-only=json-v1 listing" in out, f"plan of a bad listing: {out}")
rc, out = sh([pg, "shard", "plan", "--build-dir", B, "--shards", "0", "--out", "pb"])
check(rc == 2 and "--shards" in out, f"--shards 0: {out}")
rc, out = sh([pg, "shard", "run", "--plan", "bad.json", "--index", "0", "--out", "sb"])
check(rc == 2 and "bad.json: not a phasegate plan" in out, f"shard run of a bad plan: {out}")
rc, out = sh([pg, "merge", "--plan", "bad.json", "--out", "mb", "s0"])
check(rc == 2 and "bad.json: not a phasegate plan" in out, f"merge of a bad plan: {out}")
shutil.copytree("s1", "s1_broken")
open("s1_broken/manifest.json", "w").write("{")
rc, out = sh([pg, "merge", "--plan", "plan/plan.json", "--out", "M_broken", "s0", "s1_broken", "s2"])
mj = json.load(open("M_broken/merge.json"))
check(rc == 2 and mj["shards"][1]["rejected"] == "manifest.json is not JSON" and mj["missing_shards"] == [1],
      f"a broken manifest: exit {rc}, {mj['shards'][1]}")

# ---- a missing shard
rc, out = sh([pg, "merge", "--plan", "plan/plan.json", "--out", "M_missing", "s0", "s1"])
mj = json.load(open("M_missing/merge.json"))
lost = [r for r in mj["results"] if r["name"] in shards[2]["names"] and roles[r["name"]] == "case"]
check(rc == 2 and mj["missing_shards"] == [2] and not mj["complete"]
      and all(r["verdict"] == "not run" and "no shard ran it" in r["why"] for r in lost),
      f"missing shard: exit {rc}, {mj['missing_shards']}\n{out}")
mv = verdicts("M_missing/junit.xml")
check(all(mv[r["name"]] == ["n"] for r in lost), "the missing shard's tests are not run in the JUnit file")

# ---- a conflicting retry: the flaky case passes on a retry, an alpha case fails on one
os.unlink(FLAG)
k_flaky = next(k for k in range(3) if "beta/M1/L1/flaky" in shards[k]["names"])
k_alpha = next(k for k in range(3) if "alpha/M1/L1/L2_basic" in shards[k]["names"])
impl(bad)
retry = []
for k in sorted({k_flaky, k_alpha}):
    rc, out = sh([pg, "shard", "run", "--plan", "plan/plan.json", "--index", str(k), "--out", f"r{k}"])
    retry.append(f"r{k}")
impl(good)
rc, out = sh([pg, "merge", "--plan", "plan/plan.json", "--out", "M_retry", "s0", "s1", "s2", *retry])
mj = json.load(open("M_retry/merge.json"))
res = {r["name"]: r for r in mj["results"]}
check(rc == 1 and res["beta/M1/L1/flaky"].get("conflict") and res["alpha/M1/L1/L2_basic"].get("conflict")
      and res["beta/M1/L1/flaky"]["verdict"] == "failed" and "conflict" in res["beta/M1/L1/flaky"]["why"],
      f"conflicting retry: exit {rc}, {res['beta/M1/L1/flaky']}\n{out}")
check(not res["beta/M1/L1/c1"].get("conflict"), "a retry that agrees is no conflict")
xml = open("M_retry/junit.xml").read()
check(xml.count('name="phasegate.conflict"') >= 4, "both verdicts kept in the JUnit file, marked")
rep = json.load(open("M_retry/reports/alpha/M1/evaluation_report.json"))
c = next(c for c in rep["checks"] if c["id"] == "L2_basic")
check(c["status"] == "FAIL" and sorted(x["status"] for x in c.get("conflicts", [])) == ["FAIL", "PASS"]
      and rep["status"] == "FAIL", f"the report keeps both verdicts: {c.get('conflicts')}")
rc, out = sh([pg, "report", "--out", "M_retry/page.html", "M_retry/reports"])
page = open("M_retry/page.html").read() if rc == 0 else ""
check(rc == 0 and "shards disagree on this case" in page and "(vm, r" in page.replace(socket_host, "vm"),
      f"phasegate report shows the conflict\n{out}")

# ---- a fingerprint mismatch: the build's tests changed after the plan
configure("ON")
rc, out = sh([pg, "shard", "run", "--plan", "plan/plan.json", "--index", "0", "--out", "s0_other"])
m = json.load(open("s0_other/manifest.json"))
check(rc == 2 and "are not the plan's" in out and m["status"] == "refused"
      and m["build_fingerprint"] != m["fingerprint"] and not os.path.exists("s0_other/junit.xml"),
      f"shard run refuses another test list: exit {rc}\n{out}")
rc, out = sh([pg, "merge", "--plan", "plan/plan.json", "--out", "M_fp", "s0_other", "s1", "s2"])
mj = json.load(open("M_fp/merge.json"))
check(rc == 2 and mj["missing_shards"] == [0] and "fingerprint mismatch" in mj["shards"][0]["rejected"],
      f"merge rejects the refused shard: exit {rc}, {mj['shards'][0]}\n{out}")
rc, out = sh([pg, "shard", "plan", "--build-dir", B, "--shards", "3", "--out", "plan_other"])
rc, out = sh([pg, "merge", "--plan", "plan_other/plan.json", "--out", "M_fp2", "s0", "s1", "s2"])
mj = json.load(open("M_fp2/merge.json"))
check(rc == 2 and all("fingerprint mismatch" in s["rejected"] for s in mj["shards"]),
      f"shards of another plan are rejected: exit {rc}\n{out}")
configure("OFF")

# ---- by op: each op on one shard, gates judged by ctest there
open(FLAG, "w").close()
rc, out = sh([pg, "shard", "plan", "--build-dir", B, "--shards", "2", "--by-op", "--out", "plan_op"])
p2 = json.load(open("plan_op/plan.json"))
for op in ("alpha", "beta"):
    on = {s["index"] for s in p2["shards"] for n in s["names"] if n.startswith(op + "/")}
    check(len(on) == 1, f"by op: {op}'s tests on one shard ({on})")
check(p2["gates"] == "in-shard", "by op: gates judged in the shard")
for k in range(2):
    sh([pg, "shard", "run", "--plan", "plan_op/plan.json", "--index", str(k), "--out", f"o{k}"])
rc, out = sh([pg, "merge", "--plan", "plan_op/plan.json", "--out", "M_op", "o0", "o1"])
mo = {k: v[0] for k, v in verdicts("M_op/junit.xml").items()}
check(rc == 1 and mo == single, f"by op: merged verdicts = one local run's: {mo}")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("fleet/shard_merge: all checks passed")
