#!/usr/bin/env python3
"""tests/impl/python: how `phasegate run --impl python:…` tells the environment's failures,
the impl's structure and the device's own labels apart (docs/pypto.md "Environment
failures", docs/report.md "Failure subcategories"), on the pypto-layout op rms_gate
(tests/data/pypto/custom/rms_gate) with the impl modules of envimpls/.

    run_env.py SCENARIO --phasegate PG --root SRC --tmp DIR [--python PY]

Scenarios:
  infra      OSError libhccl.so (cannot open shared object file) and ModuleNotFoundError
             'pypto' while importing, ImportError "undefined symbol" in the call, an
             exec: impl whose loader says "cannot open shared object file": ERROR, infra,
             the subcategory and the recipe (checks[].hints, the console's hint line);
             an impl that prints an environment-looking warning and then raises its own
             ValueError stays FAIL, runtime
  structural a missing <op>_module<suffix>_wrapper and an impl with a syntax error:
             ERROR, structural (exit 2), never FAIL
  labels     each device label of the verifier's table (aicore, tile_shape, oom,
             host_crash, workspace_overlap) as failure_subcategory in the report (the
             mode and checks[].failure), the console line, the JUnit message
             (phasegate report --junit) and the HTML page (phasegate report --out)
  device_id  TILE_FWK_DEVICE_ID is the device phasegate was given (--device-id, CTest's
             CTEST_RESOURCE_GROUP_0_<TYPE>, else TILE_FWK_DEVICE_ID itself), at import and
             in the call, in modes cpu and sim; in mode npu (a stand-in torch_npu) also
             torch.npu.set_device; another index fails the impl
  env_lines  mode npu on a host with an NPU (a stand-in torch_npu) but without the CANN
             line: SKIPPED naming ASCEND_HOME_PATH and set_env.sh; the run's provenance
             lists the missing line
Exit 0 pass, 1 fail, 77 skipped (torch missing).
"""
import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ENVIMPLS = os.path.join(HERE, "envimpls")
IMPLS = os.path.join(HERE, "impls")
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


class Ctx:
    def __init__(self, a):
        self.a = a
        self.op = os.path.join(a.root, "tests", "data", "pypto", "custom", "rms_gate")
        self.n = 0

    def run(self, k, impl, modes="sim", extra=(), env=None, case="L2_canonical"):
        """(exit code, report or None, console, report path) of one `phasegate run`."""
        self.n += 1
        report = os.path.join(self.a.tmp, f"r{self.n}", "rms_gate", f"M{k}",
                              "evaluation_report.json")
        os.makedirs(os.path.dirname(report), exist_ok=True)
        cmd = [self.a.phasegate, "run", "--op-dir", self.op, "--up-to-module", str(k),
               "--impl", impl, "--modes", modes, "--report", report, "--no-golden-cache",
               "--no-bisect", "--python", self.a.python, *extra]
        if case:
            cmd += ["--case", case]
        r = subprocess.run(cmd, env=dict(os.environ, **(env or {})), capture_output=True,
                           text=True, timeout=300)
        rep = json.load(open(report)) if os.path.exists(report) else None
        print(f"$ {' '.join(cmd)}\n-> exit {r.returncode}\n{r.stdout[-2500:]}{r.stderr[-1500:]}")
        return r.returncode, rep, r.stdout + r.stderr, report


def env_impl(name):
    return "python:" + os.path.join(ENVIMPLS, name)


def failure(rep):
    c = rep["checks"][0] if rep and rep.get("checks") else {}
    return c, c.get("failure") or {}, (c.get("modes") or [{}])[0]


def expect_infra(c, name, sub, words, recipe_words, extra=()):
    rc, rep, con, _ = c.run(1, env_impl(name) if ":" not in name else name, extra=extra)
    chk, f, m = failure(rep)
    check(rc == 2 and rep and rep["status"] == "ERROR" and f.get("failure_category") == "infra"
          and f.get("failure_subcategory") == sub and m.get("failure_subcategory") == sub,
          f"{name}: ERROR, infra, {sub} (exit {rc}): {f}")
    check(all(w in f.get("summary", "") for w in words), f"{name}: the summary has {words}")
    hints = " ".join(h for h in chk.get("hints", []) if isinstance(h, str))
    check(hints.startswith("environment:") and all(w in hints for w in recipe_words),
          f"{name}: the recipe is the case's hint ({recipe_words}): {hints}")
    check(f"ERROR] rms_gate M1 L2_canonical sim  infra/{sub}:" in con
          and "hint: environment:" in con, f"{name}: the console line says infra/{sub}, "
          "and the hint line the recipe")
    check(rep["first_failure"].get("failure_subcategory") == sub,
          f"{name}: first_failure carries the subcategory")


def sc_infra(c):
    expect_infra(c, "hccl_impl.py", "shared_library",
                 ["OSError", "libhccl.so: cannot open shared object file"],
                 ["LD_LIBRARY_PATH", "set_env.sh"])
    if importlib.util.find_spec("pypto") is None:
        expect_infra(c, "nopypto_impl.py", "missing_module",
                     ["ModuleNotFoundError", "No module named 'pypto'"],
                     ["PYTHONPATH", "--python", "set_env.sh"])
    else:
        print("note: a pypto is importable here: the missing-module case is not run")
    expect_infra(c, "symbol_impl.py", "undefined_symbol", ["undefined symbol"],
                 ["CANN", "rebuild"])
    # no exception as data (an exec: program): the captured stderr is read instead
    loader = ("exec:echo 'python3: error while loading shared libraries: libascendcl.so: "
              "cannot open shared object file: No such file or directory' >&2; exit 127")
    expect_infra(c, loader, "shared_library", ["exited with status 127"], ["LD_LIBRARY_PATH"])
    # the impl's own exception decides, not a warning it printed before
    rc, rep, con, _ = c.run(1, env_impl("warned_impl.py"))
    chk, f, m = failure(rep)
    check(rc == 1 and f.get("failure_category") == "runtime" and "failure_subcategory" not in f
          and "ValueError" in f.get("summary", ""),
          f"a warning about a module, then a ValueError: FAIL, runtime (exit {rc}): {f}")


def sc_structural(c):
    rc, rep, con, _ = c.run(2, "python:" + os.path.join(IMPLS, "faulty_impl.py"))
    chk, f, m = failure(rep)
    check(rc == 2 and rep["status"] == "ERROR" and f.get("failure_category") == "structural"
          and "rms_gate_module12_wrapper" in f.get("summary", ""),
          f"missing wrapper: ERROR, structural, naming it (exit {rc}): {f}")
    check("[ERROR] rms_gate M2 L2_canonical sim  structural:" in con, "the console says so")
    broken = os.path.join(c.a.tmp, "broken_impl.py")
    with open(broken, "w") as fh:
        fh.write("def rms_gate_module1_wrapper(x, w_norm, w_up)\n    return x\n")
    rc, rep, con, _ = c.run(1, "python:" + broken)
    chk, f, m = failure(rep)
    check(rc == 2 and rep["status"] == "ERROR" and f.get("failure_category") == "structural"
          and "SyntaxError" in f.get("summary", "") and "failure_subcategory" not in f,
          f"an impl with a syntax error: ERROR, structural (exit {rc}): {f}")
    hints = " ".join(h for h in chk.get("hints", []) if isinstance(h, str))
    check("imported" in hints, f"the hint says the import failed: {hints}")
    check("SyntaxError" in m.get("stdout", ""), "the traceback is in the captured output")


LABELS = {"aicore": ("FAIL", "runtime"), "tile_shape": ("FAIL", "runtime"),
          "oom": ("FAIL", "runtime"), "host_crash": ("FAIL", "runtime"),
          "workspace_overlap": ("FAIL", "precision")}


def sc_labels(c):
    reports, lines = [], ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"x\">\n"]
    for label, (status, cat) in LABELS.items():
        rc, rep, con, path = c.run(1, env_impl("device_impl.py"), env={"PG_DEVICE_FAULT": label})
        chk, f, m = failure(rep)
        check(rc == 1 and rep and rep["status"] == status and f.get("failure_category") == cat
              and f.get("failure_subcategory") == label and m.get("failure_subcategory") == label,
              f"{label}: {status}, {cat}, failure_subcategory {label} (exit {rc}): {f}")
        check(f"[FAIL] rms_gate M1 L2_canonical sim  {cat}/{label}:" in con,
              f"{label}: the console line says {cat}/{label}")
        check(f"first failure: L2_canonical ({cat}/{label}, boundary M1" in con,
              f"{label}: the summary line says {cat}/{label}")
        case_dir = os.path.join(c.a.tmp, f"lab_{label}")
        shutil.rmtree(case_dir, ignore_errors=True)
        os.makedirs(os.path.join(case_dir, label, "M1"))
        shutil.copy(path, os.path.join(case_dir, label, "M1", "evaluation_report.json"))
        # the JUnit test of the case as ctest names it, the report under its op's name
        rep["op_name"] = label
        rep.pop("registration", None)
        json.dump(rep, open(os.path.join(case_dir, label, "M1", "evaluation_report.json"), "w"))
        reports.append(case_dir)
        lines.append(f"\t<testcase name=\"{label}/M1/L2/L2_canonical\" classname=\"x\" "
                     f"status=\"fail\">\n\t\t<failure message=\"\"/>\n\t</testcase>\n")
    lines.append("</testsuite>\n")
    junit = os.path.join(c.a.tmp, "junit.xml")
    with open(junit, "w") as fh:
        fh.write("".join(lines))
    html = os.path.join(c.a.tmp, "page.html")
    r = subprocess.run([c.a.phasegate, "report", "--junit", junit, "--out", html, *reports],
                       capture_output=True, text=True, timeout=120)
    print(r.stdout, r.stderr)
    check(r.returncode == 0, f"phasegate report --junit --out: exit {r.returncode}")
    xml = open(junit).read()
    page = open(html).read() if os.path.exists(html) else ""
    for label, (status, cat) in LABELS.items():
        m = re.search(rf'name="{label}/M1/L2/L2_canonical"[^>]*>\s*<failure message="([^"]*)"', xml)
        check(m and f"category: {cat}; subcategory: {label};" in m.group(1),
              f"{label}: the JUnit message names the subcategory: {m and m.group(1)[:200]}")
        check(f"{cat} / {label}" in page, f"{label}: the HTML page shows '{cat} / {label}'")


def sc_device_id(c):
    for how, extra, env, want in (
            ("--device-id 3", ["--device-id", "3"], {}, "3"),
            ("CTest resource group", [], {"CTEST_RESOURCE_GROUP_0": "npus",
                                          "CTEST_RESOURCE_GROUP_0_NPUS": "id:2,slots:1"}, "2"),
            ("TILE_FWK_DEVICE_ID itself", [], {"TILE_FWK_DEVICE_ID": "5"}, "5")):
        rc, rep, con, _ = c.run(1, env_impl("device_id_impl.py"), modes="cpu,sim", extra=extra,
                                env=dict(env, PG_EXPECT_DEVICE=want))
        check(rc == 0 and rep and rep["status"] == "PASS",
              f"{how}: the impl sees TILE_FWK_DEVICE_ID={want} in cpu and sim (exit {rc})")
        check(rep and rep["run"]["device"]["index"] == int(want),
              f"{how}: the report's device index is {want}")
        outs = [m.get("stdout", "") for m in rep["checks"][0]["modes"]] if rep else []
        check(all(f"at import {want}, at the call {want}" in o for o in outs),
              f"{how}: both at import and in the call: {outs}")
    # mode npu (a stand-in torch_npu that records set_device; a pypto impl gets host
    # tensors): TILE_FWK_DEVICE_ID and torch.npu.set_device both name the device
    old = os.environ.get("PYTHONPATH")
    pp = os.pathsep.join([os.path.join(ENVIMPLS, "npurec"), IMPLS] + ([old] if old else []))
    rc, rep, con, _ = c.run(1, env_impl("npu_device_impl.py"), modes="npu",
                            extra=["--device-id", "2"],
                            env={"PYTHONPATH": pp, "ASCEND_HOME_PATH": c.a.tmp,
                                 "PG_EXPECT_DEVICE": "2"})
    out = rep["checks"][0]["modes"][0].get("stdout", "") if rep else ""
    check(rc == 0 and "TILE_FWK_DEVICE_ID 2, torch.npu.current_device() 2" in out,
          f"npu: TILE_FWK_DEVICE_ID and torch.npu.set_device name device 2 (exit {rc})")
    # the impl can fail: another index than the one it was given
    rc, rep, con, _ = c.run(1, env_impl("device_id_impl.py"), modes="cpu",
                            extra=["--device-id", "1"], env={"PG_EXPECT_DEVICE": "0"})
    check(rc == 1 and "expected 0" in con, f"device 1 given, 0 expected: FAIL (exit {rc})")


def sc_env_lines(c):
    fakenpu = os.path.join(HERE, "fakenpu")
    old = os.environ.get("PYTHONPATH")
    pp = os.pathsep.join([fakenpu, IMPLS] + ([old] if old else []))
    rc, rep, con, _ = c.run(1, "python:" + os.path.join(IMPLS, "pypto_impl.py"), modes="npu",
                            env={"PYTHONPATH": pp, "ASCEND_HOME_PATH": ""})
    chk, f, m = failure(rep)
    check(rc == 77 and rep and rep["per_mode_status"] == {"npu": "SKIPPED"},
          f"npu without ASCEND_HOME_PATH: SKIPPED (exit {rc})")
    check("ASCEND_HOME_PATH" in m.get("summary", "") and "set_env.sh" in m.get("summary", ""),
          f"the reason names the variable and the line: {m.get('summary')}")
    check("ASCEND_HOME_PATH" in con, "the console names it")
    py = (rep or {}).get("run", {}).get("python") or {}
    check("ASCEND_HOME_PATH (npu)" in (py.get("missing_env") or []),
          f"the provenance lists the missing line: {py}")
    rc, rep, con, _ = c.run(1, "python:" + os.path.join(IMPLS, "pypto_impl.py"), modes="npu",
                            env={"PYTHONPATH": pp, "ASCEND_HOME_PATH": c.a.tmp})
    check(rc == 0 and rep and rep["per_mode_status"] == {"npu": "PASS"},
          f"with the line: npu runs (exit {rc})")
    py = (rep or {}).get("run", {}).get("python") or {}
    check(not py.get("missing_env"), f"nothing missing in the provenance: {py}")


SCENARIOS = {n[3:]: f for n, f in globals().items() if n.startswith("sc_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--phasegate", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    if importlib.util.find_spec("torch") is None:
        print("SKIP: torch is not importable")
        return 77
    shutil.rmtree(a.tmp, ignore_errors=True)
    os.makedirs(a.tmp)
    SCENARIOS[a.scenario](Ctx(a))
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
