#!/usr/bin/env python3
"""tests/impl/python: `phasegate run --impl python:FILE.py[::FUNCTION]` end to end on the
pypto-style rms_gate op (tests/data/pypto/custom/rms_gate), impl modules in impls/.

    run_python.py SCENARIO --phasegate PG --root SRC --tmp DIR [--python PY]

Scenarios:
  pass         phases 1..3 PASS (tensor, tuple, dict returns); one worker process serves
               every case of a mode (same pid in every call's captured output, startup_ms
               only on the first call); the M2 bug (PG_PYIMPL_BUG=1) FAILs as precision;
               the repro line carries --python
  function     `::FUNCTION` picks the function for the phase
  structural   a missing <op>_module12_wrapper: ERROR, structural; a wrong leaf count:
               FAIL, structural
  runtime      an exception: FAIL, runtime, the traceback in the call's captured output
  skipped      mode cuda on a host without a CUDA GPU: SKIPPED with the reason (exit 77)
  pypto        the stand-in pypto package: the impl sees RunMode.SIM in mode sim, NPU in npu
  numpy        torch not importable (impls/../notorch first on PYTHONPATH): numpy arrays,
               PASS
  serve        `phasegate serve --impl python:… --python PY` prestarts the worker a run
               with the same interpreter leases: one pid across two runs
  usage        a missing PATH.py, a bad ::FUNCTION, a missing interpreter: exit 2 naming
               it, before any case runs; PHASEGATE_PYTHON picks the interpreter
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

    def run(self, k, impl, modes="sim", extra=(), env=None, python=True, cwd=None):
        """(exit code, report or None, console) of one `phasegate run`."""
        self.n += 1
        report = os.path.join(self.a.tmp, f"r{self.n}.json")
        cmd = [self.a.phasegate, "run", "--op-dir", self.op, "--up-to-module", str(k),
               "--impl", impl, "--modes", modes, "--report", report, "--no-golden-cache",
               *extra]
        if python:
            cmd += ["--python", self.a.python]
        r = subprocess.run(cmd, env=dict(os.environ, **(env or {})), capture_output=True,
                           text=True, timeout=300, cwd=cwd)
        rep = json.load(open(report)) if os.path.exists(report) else None
        print(f"$ {' '.join(cmd)}\n-> exit {r.returncode}\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
        return r.returncode, rep, r.stdout + r.stderr

    def calls(self, rep):
        return [(c["id"], m) for c in rep["checks"] for m in c["modes"]]


def impl(name):
    return "python:" + os.path.join(IMPLS, name)


def sc_pass(c):
    for k in (1, 2, 3):
        rc, rep, _ = c.run(k, impl("rms_gate_impl.py"))
        check(rc == 0 and rep and rep["status"] == "PASS", f"phase {k}: PASS (exit {rc})")
    rc, rep, _ = c.run(1, impl("rms_gate_impl.py"))
    calls = c.calls(rep)
    pids = [re.findall(r"stray print, loads=(\d+) pid=(\d+)", m.get("stdout", "")) for _, m in calls]
    check(all(len(p) == 1 for p in pids), f"every call's stdout holds its own print: {pids}")
    check(len({p[0][1] for p in pids if p}) == 1, f"one process served every case: {pids}")
    check(all(p[0][0] == "1" for p in pids if p), "the module was imported once")
    check((calls[0][1].get("startup_ms") or 0) > 0, "the first call reports startup_ms")
    # provenance: the interpreter and the versions of what the impl runs on
    py = rep["run"].get("python") or {}
    check(py.get("interpreter") and py.get("version") and "torch" in py and "torch_npu" in py
          and "pypto" in py and rep["checks"][0]["run"].get("python") == py,
          f"the report names the interpreter and torch / torch_npu / pypto versions: {py}")
    check(all(m.get("startup_ms") is None for _, m in calls[1:]), "later calls report none")
    check(f"--python {c.a.python}" in rep["checks"][0].get("repro", ""),
          f"the repro line names the interpreter: {rep['checks'][0].get('repro')}")
    rc, rep, _ = c.run(2, impl("rms_gate_impl.py"), env={"PG_PYIMPL_BUG": "1"})
    check(rc == 1 and rep["first_failure"]["failure_category"] == "precision",
          "the M2 bug fails as precision")


def sc_function(c):
    rc, rep, _ = c.run(2, impl("rms_gate_impl.py") + "::rms_gate_module12_wrapper")
    check(rc == 0 and rep["status"] == "PASS", f"::FUNCTION of phase 2: PASS (exit {rc})")
    rc, rep, _ = c.run(3, impl("rms_gate_impl.py") + "::rms_gate_module12_wrapper")
    check(rc == 1 and rep["first_failure"]["failure_category"] == "structural",
          "::FUNCTION is called for every phase: phase 3 gets phase 2's output (structural)")


def sc_structural(c):
    rc, rep, _ = c.run(2, impl("faulty_impl.py"), extra=["--case", "L2_canonical"])
    ff = rep["first_failure"]
    check(rc == 2 and rep["status"] == "ERROR" and ff["failure_category"] == "structural",
          f"missing function: ERROR, structural (as the workflow routes it) {ff}")
    check("rms_gate_module12_wrapper" in ff["summary"], "the summary names rms_gate_module12_wrapper")
    hints = json.dumps(rep["checks"][0])
    check("python: impl module defines the function" in hints, "the hint says what to define")
    rc, rep, _ = c.run(1, impl("faulty_impl.py"), extra=["--case", "L2_canonical"])
    ff = rep["first_failure"]
    check(rc == 1 and ff["failure_category"] == "structural" and "returned 2 output(s)"
          in ff["summary"], f"wrong leaf count: structural {ff}")


def sc_runtime(c):
    rc, rep, _ = c.run(3, impl("faulty_impl.py"), extra=["--case", "L2_canonical"])
    ff = rep["first_failure"]
    check(rc == 1 and ff["failure_category"] == "runtime", f"exception: runtime {ff}")
    check("RuntimeError: kernel launch failed on purpose" in ff["summary"], "the summary has it")
    out = c.calls(rep)[0][1].get("stdout", "")
    check("Traceback (most recent call last)" in out and "about to fail" in out
          and "faulty_impl.py" in out, f"the traceback is in the call's stdout: {out!r}")


def sc_skipped(c):
    import torch
    if torch.cuda.is_available():
        print("a CUDA GPU is present: mode cuda runs")
        rc, rep, _ = c.run(1, impl("rms_gate_impl.py"), modes="cuda")
        check(rc == 0, "cuda with a GPU: PASS")
        return
    rc, rep, con = c.run(1, impl("rms_gate_impl.py"), modes="cuda")
    check(rc == 77 and rep["per_mode_status"] == {"cuda": "SKIPPED"}, f"cuda: SKIPPED (exit {rc})")
    check("torch.cuda.is_available() is False" in con, "the reason is printed")


def with_path(*dirs):
    """PYTHONPATH with dirs first."""
    old = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join(list(dirs) + ([old] if old else []))}


def sc_pypto(c):
    """The stand-in pypto impl: the run mode set both ways (module attribute, JIT entry's
    runtime_options) in sim; npu SKIPPED without torch_npu, NPU both ways with one."""
    rc, rep, con = c.run(1, impl("pypto_impl.py"), modes="sim,npu", extra=["--case", "L2_canonical"])
    check(rc == 0 and rep and rep["per_mode_status"] == {"sim": "PASS", "npu": "SKIPPED"},
          f"pypto impl without torch_npu: sim PASS, npu SKIPPED (exit {rc})")
    check("torch_npu" in con, "the npu reason names torch_npu")
    rc, rep, _ = c.run(1, impl("pypto_impl.py"), modes="sim,npu", extra=["--case", "L2_canonical"],
                       env=dict(with_path(os.path.join(HERE, "fakenpu")),
                                ASCEND_HOME_PATH=c.a.tmp))
    check(rc == 0 and rep and rep["status"] == "PASS",
          f"pypto impl with a torch_npu: PASS in sim and npu (exit {rc})")
    for _, m in c.calls(rep) if rep else ():
        want = {"sim": "SIM", "npu": "NPU"}[m["mode"]]
        out = m.get("stdout", "")
        check(f"__pypto_run_mode__ = {want}" in out,
              f"{m['mode']}: the module attribute is RunMode.{want}: {out!r}")
        check(f"runtime_options run_mode = {want}" in out,
              f"{m['mode']}: the JIT entry received runtime_options run_mode {want}: {out!r}")
    # the worker names the npu device it ran on (torch.npu.get_device_name): the report's
    # run.device.name, per case and for the run
    names = {c["run"]["device"]["name"] for c in rep["checks"]} if rep else set()
    check(names == {"fake Ascend 0"} and rep["run"]["device"]["name"] == "fake Ascend 0",
          f"run.device.name from the worker: {names}, {rep and rep['run']['device']}")


def sc_pypto_cwd(c):
    """Finding 21/4: a directory named pypto (no RunMode) in the working directory — the
    checkout's suites/ has one — is not pypto: a pure-torch impl still passes."""
    cwd = os.path.join(c.a.tmp, "cwd")
    shutil.rmtree(cwd, ignore_errors=True)
    shutil.copytree(os.path.join(HERE, "localpypto"), cwd)
    # the impl alone in its directory (impls/ holds the stand-in pypto, which would be
    # found first): only the working directory's pypto/ is importable
    alone = os.path.join(c.a.tmp, "alone")
    os.makedirs(alone, exist_ok=True)
    shutil.copy(os.path.join(IMPLS, "rms_gate_impl.py"), alone)
    rc, rep, con = c.run(1, "python:" + os.path.join(alone, "rms_gate_impl.py"),
                         modes="sim,cpu", cwd=cwd)
    check(rc == 0 and rep and rep["status"] == "PASS",
          f"pure-torch impl from a directory holding pypto/: PASS (exit {rc})")
    check("RunMode" not in con, "no AttributeError about RunMode")
    rc, rep, con = c.run(1, impl("pypto_impl.py"), modes="sim", cwd=cwd,
                         extra=["--case", "L2_canonical"])
    check(rc == 0 and rep and "__pypto_run_mode__ = SIM" in c.calls(rep)[0][1].get("stdout", ""),
          f"the impl's own pypto still wins over the working directory's (exit {rc})")


def sc_pypto_importable(c):
    """Finding 21/4: a pypto importable (with RunMode) but no torch_npu: a pure-torch
    impl's npu mode is SKIPPED naming torch_npu, never a CPU pass; sim and cpu PASS."""
    rc, rep, con = c.run(1, impl("rms_gate_impl.py"), modes="sim,cpu,npu",
                         env=with_path(IMPLS))
    check(rc == 0 and rep and rep["per_mode_status"] == {"sim": "PASS", "cpu": "PASS",
                                                         "npu": "SKIPPED"},
          f"sim and cpu PASS, npu SKIPPED (exit {rc}): {rep and rep['per_mode_status']}")
    npu = [m for _, m in c.calls(rep)] if rep else []
    npu = [m for m in npu if m["mode"] == "npu"]
    check(npu and all("torch_npu" in (m.get("summary") or "") for m in npu),
          f"every npu skip names torch_npu: {[m.get('summary') for m in npu][:1]}")
    check(all("__pypto_run_mode__" not in m.get("stdout", "") for _, m in c.calls(rep) or ()),
          "the pure-torch impl is not treated as a pypto impl")


def fake_python(c, name, hide):
    """An interpreter in which `import HIDE` fails (sitecustomize on a private
    PYTHONPATH sets sys.modules[HIDE] = None), as a shell script exec'ing this one."""
    site = os.path.join(c.a.tmp, f"site_{name}")
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "sitecustomize.py"), "w") as f:
        f.write(f"import sys\nsys.modules[{hide!r}] = None\n")
    path = os.path.join(c.a.tmp, name)
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\nPYTHONPATH='{site}'${{PYTHONPATH:+:$PYTHONPATH}}\n"
                f"export PYTHONPATH\nexec '{c.a.python}' \"$@\"\n")
    os.chmod(path, 0o755)
    return path


def sc_interpreter(c):
    """Finding 21/7, impl side: an interpreter without numpy — or without torch where the
    impl module imports it — is one error before any case (exit 2), naming it, what it
    lacks and --python / PHASEGATE_PYTHON; an optional torch import (try/except) is not
    required."""
    nonumpy = fake_python(c, "nonumpy", "numpy")
    notorch = fake_python(c, "notorch", "torch")
    top = os.path.join(c.a.tmp, "torch_at_top")
    os.makedirs(top, exist_ok=True)
    with open(os.path.join(top, "rms_gate_impl.py"), "w") as f:
        f.write("import torch\nfrom importlib import import_module\n")
    for py, spec, lacks, env in (
            (nonumpy, impl("rms_gate_impl.py"), "numpy (", {}),
            (notorch, "python:" + os.path.join(top, "rms_gate_impl.py"), "torch (", {}),
            (nonumpy, impl("rms_gate_impl.py"), "numpy (", {"PHASEGATE_PYTHON": nonumpy})):
        extra = () if env else ("--python", py)
        rc, rep, con = c.run(1, spec, modes="sim,cpu", extra=extra, env=env, python=False)
        errors = [l for l in con.splitlines() if "error" in l.lower()]
        check(rc == 2 and len(errors) == 1 and "[ERROR]" not in con and rep is not None
              and rep["cases_total"] == 0
              and rep["first_failure"]["failure_category"] == "infra"
              and lacks in rep["first_failure"]["summary"],
              f"{os.path.basename(py)}: exit 2, one error line, no case ran, one infra ERROR "
              f"in the report (exit {rc})")
        line = errors[0] if errors else ""
        check(f"'{py}'" in line and lacks in line and "--python" in line and
              "PHASEGATE_PYTHON" in line, f"the line names the interpreter, {lacks[:-2]}, "
              f"--python and PHASEGATE_PYTHON: {line}")
    rc, rep, _ = c.run(1, impl("rms_gate_impl.py"), extra=("--python", notorch), python=False)
    check(rc == 0 and rep and rep["status"] == "PASS",
          f"an impl whose torch import is optional runs without torch (exit {rc})")


def sc_numpy(c):
    pp = os.path.join(HERE, "notorch")
    env = {"PYTHONPATH": pp + (os.pathsep + os.environ["PYTHONPATH"]
                               if os.environ.get("PYTHONPATH") else "")}
    for k in (1, 2, 3):
        rc, rep, _ = c.run(k, impl("rms_gate_impl.py"), env=env)
        check(rc == 0 and rep["status"] == "PASS", f"numpy phase {k}: PASS (exit {rc})")


def sc_serve(c):
    ctl = os.path.join(c.a.tmp, "ctl")
    serve = [c.a.phasegate, "serve", "--control", ctl, "--op-dir", c.op,
             "--impl", impl("rms_gate_impl.py"), "--python", c.a.python, "--modes", "sim"]
    r = subprocess.run(serve, capture_output=True, text=True, timeout=60)
    print(r.stdout, r.stderr)
    check(r.returncode == 0, f"serve started (exit {r.returncode})")
    try:
        pids = set()
        for _ in range(2):
            rc, rep, _ = c.run(1, impl("rms_gate_impl.py"), extra=["--serve-control", ctl])
            check(rc == 0, f"run with --serve-control: PASS (exit {rc})")
            for _, m in c.calls(rep):
                pids.update(re.findall(r"pid=(\d+)", m.get("stdout", "")))
        check(len(pids) == 1, f"one warm worker served both runs: {pids}")
        st = subprocess.run([c.a.phasegate, "serve", "--control", ctl, "--status"],
                            capture_output=True, text=True, timeout=30)
        check("phasegate.worker" in st.stdout, f"the daemon holds the Python worker: {st.stdout}")
    finally:
        subprocess.run([c.a.phasegate, "serve", "--control", ctl, "--stop"], timeout=60)


def sc_usage(c):
    missing = os.path.join(IMPLS, "nowhere.py")
    rc, rep, con = c.run(1, "python:" + missing)
    check(rc == 2 and missing in con and rep is not None and rep["status"] == "ERROR",
          f"missing file: exit 2 naming it, an ERROR report ({rc})")
    rc, rep, con = c.run(1, impl("rms_gate_impl.py") + "::not-a-name")
    check(rc == 2 and "not a Python function name" in con, f"bad ::FUNCTION: exit 2 ({rc})")
    rc, rep, con = c.run(1, impl("rms_gate_impl.py"), python=False,
                         extra=["--python", "/nonexistent/python9"])
    check(rc == 2 and "/nonexistent/python9" in con, f"missing interpreter: exit 2 ({rc})")
    # PHASEGATE_PYTHON: a wrapper that marks the environment, then runs the interpreter
    wrapper = os.path.join(c.a.tmp, "py-wrapper")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nPG_VIA=wrapper exec '{c.a.python}' \"$@\"\n")
    os.chmod(wrapper, 0o755)
    rc, rep, _ = c.run(1, impl("env_impl.py"), python=False, env={"PHASEGATE_PYTHON": wrapper},
                       extra=["--case", "L2_canonical"])
    out = c.calls(rep)[0][1].get("stdout", "") if rep else ""
    check(rc == 0 and "PG_VIA=wrapper" in out, f"PHASEGATE_PYTHON is used: {out!r}")


SCENARIOS = {n[3:]: f for n, f in globals().items() if n.startswith("sc_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--phasegate", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    if a.scenario != "numpy" and importlib.util.find_spec("torch") is None:
        print("SKIP: torch is not importable")
        return 77
    shutil.rmtree(a.tmp, ignore_errors=True)
    os.makedirs(a.tmp)
    SCENARIOS[a.scenario](Ctx(a))
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
