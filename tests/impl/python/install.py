#!/usr/bin/env python3
"""tests/impl/python: the installed Python side (docs/python.md "Installed").

    install.py --build BUILD --root SRC --tmp DIR --python PY --prefix P --pydir D [--site-check]

1. `cmake --install BUILD --prefix DIR/prefix`: the package and pg_exec_helper.py land in
   DIR/prefix/D, the wheel in DIR/prefix/share/phasegate/python;
2. the installed CLI runs a python: impl with no PYTHONPATH and no PHASEGATE_PYTHON_DIR,
   and the worker imports the installed package (not the source tree's);
3. --site-check: P/D (the configured prefix) is on the interpreter's sys.path, so an
   impl imports phasegate / pg_exec_helper there without sys.path hacks;
4. the wheel installs offline into a venv (`python3 -m venv --system-site-packages`,
   `pip install --no-index`) and its python runs `-m phasegate.worker` with nothing else
   on the path (skipped, with the reason, when venv/ensurepip is missing: python3-venv).
Exit 0 pass, 1 fail, 77 torch missing.
"""
import argparse
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "worker_side"))
sys.path.insert(0, HERE)
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PHASEGATE_PYTHON_DIR", "PHASEGATE_PYTHON")}
    env.update(extra)
    return env


def main():
    ap = argparse.ArgumentParser()
    for n in ("build", "root", "tmp", "python", "prefix", "pydir"):
        ap.add_argument("--" + n, required=True)
    ap.add_argument("--site-check", action="store_true")
    a = ap.parse_args()
    if importlib.util.find_spec("torch") is None:
        print("SKIP: torch is not importable")
        return 77
    shutil.rmtree(a.tmp, ignore_errors=True)
    os.makedirs(a.tmp)
    prefix = os.path.join(a.tmp, "prefix")
    r = subprocess.run(["cmake", "--install", a.build, "--prefix", prefix],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"cmake --install: {r.stderr[-800:]}")
    pkg = os.path.join(prefix, a.pydir)
    for f in ("phasegate/__init__.py", "phasegate/worker.py", "phasegate/protocol.py",
              "phasegate/npy.py", "pg_exec_helper.py"):
        check(os.path.isfile(os.path.join(pkg, f)), f"installed {a.pydir}/{f}")
    wheels = glob.glob(os.path.join(prefix, "share", "phasegate", "python", "phasegate-*-py3-none-any.whl"))
    check(len(wheels) == 1, f"installed wheel: {wheels}")

    # the installed CLI finds the installed package by itself
    report = os.path.join(a.tmp, "r.json")
    op = os.path.join(a.root, "tests", "data", "pypto", "custom", "rms_gate")
    impl = os.path.join(HERE, "impls", "where_impl.py")
    r = subprocess.run([os.path.join(prefix, "bin", "phasegate"), "run", "--op-dir", op,
                        "--impl", "python:" + impl, "--python", a.python, "--up-to-module", "1",
                        "--case", "L2_canonical", "--report", report, "--no-golden-cache"],
                       env=clean_env(), capture_output=True, text=True, timeout=300)
    print(r.stdout[-2000:], r.stderr[-2000:])
    check(r.returncode == 0, f"installed phasegate run python: PASS (exit {r.returncode})")
    if os.path.exists(report):
        out = json.load(open(report))["checks"][0]["modes"][0].get("stdout", "")
        want = os.path.join(pkg, "phasegate", "__init__.py")
        check(f"phasegate package: {want}" in out, f"the worker ran the installed package: {out!r}")

    if a.site_check:
        site = os.path.join(a.prefix, a.pydir)
        r = subprocess.run([a.python, "-c", "import sys; print('\\n'.join(sys.path))"],
                           env=clean_env(), capture_output=True, text=True)
        check(site in r.stdout.split("\n"), f"{site} is on {a.python}'s sys.path: {r.stdout!r}")

    # the wheel, offline, into a venv
    venv = os.path.join(a.tmp, "venv")
    r = subprocess.run([a.python, "-m", "venv", "--system-site-packages", venv],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"SKIPPED venv check: `{a.python} -m venv` failed (install python3-venv): "
              f"{r.stderr.strip()[-400:]}")
    else:
        vpy = os.path.join(venv, "bin", "python")
        r = subprocess.run([vpy, "-m", "pip", "install", "--no-index", wheels[0]],
                           env=clean_env(), capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, f"pip install --no-index the wheel: {r.stdout[-600:]}{r.stderr[-600:]}")
        from pyworker import PyWorker, rms_request, expect_out, reference, rms_inputs  # noqa
        from worker_driver import Worker
        w = Worker(a.tmp, "venv", f"'{vpy}' -m phasegate.worker", "sim",
                   env={"PYTHONPATH": "", "PHASEGATE_PYTHON_DIR": ""})
        try:
            w.handshake(60)
            req = rms_request(a.tmp, 1)
            w.send_raw((json.dumps(dict(req, id=1, call={"file": impl})) + "\n").encode())
            ans = w.read_json(60)
            check(ans.get("status") == "ok", f"the venv's worker answers ok: {ans}")
            expect_out(req, "xn", reference(rms_inputs(), 1), "float16")
            check(f"phasegate package: {venv}" in w.stderr(),
                  f"the venv's package ran: {w.stderr()[-500:]!r}")
        except Exception as e:  # noqa: BLE001 — a Fail from the driver
            check(False, f"venv worker: {e}")
        finally:
            w.cleanup()
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
