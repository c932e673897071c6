"""fleet/cdash: cmake/PhaseGateDashboard.cmake (a `ctest -S` script) submits each
shard's Test part to a stub CDash on 127.0.0.1, and a retried shard replaces its first
attempt: the stub, keying builds on (site, build name, stamp) as CDash does, holds every
planned test of every shard exactly once (docs/fleet.md "CDash").

    cdash.py PHASEGATE SOURCE_ROOT OP_DIR PLUGIN WORK_DIR
"""
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import urllib.parse

pg, root, op_dir, plugin, work = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
failures = []
B = os.path.join(work, "build")
submissions = []  # (query dict, body text)


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


class Stub(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace") if n else ""
        q = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(self.path).query))
        if body:
            submissions.append((q, body))
        reply = b'<cdash version="3.0"><status>OK</status><message></message><md5>x</md5></cdash>\n'
        self.send_response(200)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    do_PUT = do_POST = do_GET = answer

    def log_message(self, *a):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stub)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/submit.php?project=mini"

os.symlink(plugin, os.path.join(work, "impl.so"))
p = subprocess.run(["cmake", "-S", os.path.join(root, "tests/fleet/mini"), "-B", B, f"-DPG={pg}",
                    f"-DOP_DIR={op_dir}", f"-DIMPL={work}/impl.so", f"-DFLAG={work}/no.flag",
                    f"-DSESSION_SCRIPT={root}/cmake/PhaseGateSession.cmake"],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
check(p.returncode == 0, "configure the mini project\n" + p.stdout)
p = subprocess.run([pg, "shard", "plan", "--build-dir", B, "--shards", "2", "--out", "plan"],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
check(p.returncode == 0, "shard plan\n" + p.stdout)
plan = json.load(open("plan/plan.json"))


def dashboard(index, out):
    env = {k: v for k, v in os.environ.items() if k != "PHASEGATE_REPORT_ROOT"}
    p = subprocess.run(["ctest", "-S", os.path.join(root, "cmake/PhaseGateDashboard.cmake"), f"-DPG_RUNNER={pg}",
                        f"-DPG_PLAN={work}/plan/plan.json", f"-DPG_OUT={work}/{out}", f"-DPG_SUBMIT_URL={url}",
                        f"-DPG_INDEX={index}", "-DPG_SUITE=mini", "-DPG_STAMP=nightly-42"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(p.returncode == 0, f"dashboard shard {index} -> {out}: exit {p.returncode}\n{p.stdout}")


dashboard(0, "d0")
dashboard(1, "d1")
dashboard(1, "d1_retry")  # the scheduler ran shard 1 again
server.shutdown()

tests_parts = [(q, b) for q, b in submissions if "Test" in q.get("FileName", "") or "<Testing>" in b]
check(len(tests_parts) == 3, f"three Test submissions: {[q for q, _ in submissions]}")
builds = {}
for q, body in tests_parts:
    m = re.search(r'<Site BuildName="([^"]*)"\s*BuildStamp="([^"]*)"\s*Name="([^"]*)"', body)
    key = (q.get("site"), q.get("build"), q.get("stamp"))
    check(m and (m.group(3), m.group(1), m.group(2)) == key, f"the file's Site element is the query's {key}")
    builds[key] = re.findall(r'<Test Status="[a-z]*">\s*<Name>([^<]*)</Name>', body)  # a retry replaces
host = socket.gethostname()
names = sorted(k[1] for k in builds)
check(names == ["mini-host-shard0", "mini-host-shard1"] and len({k[2] for k in builds}) == 1
      and all(k[0] for k in builds), f"one build per shard, one stamp, site set: {list(builds)}")
counted = [n for tests in builds.values() for n in tests]
planned = [n for s in plan["shards"] for n in s["names"] if not n.endswith(("/contract", "/report/session"))]
fixtures = [n for n in counted if n.endswith(("/contract", "/report/session"))]
check(sorted(n for n in counted if n not in fixtures) == sorted(planned),
      f"every planned test exactly once\n counted {sorted(counted)}\n planned {sorted(planned)}")
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("fleet/cdash: all checks passed")
