#!/usr/bin/env python3
"""`run --save-data DIR` saves each mode's impl outputs as the runner compared them,
DIR/<case>/impl/<mode>/<name>.npy, for every adapter, and the reference probes as
DIR/<case>/out/inspection_<name>.npy.

    save_impl.py --phasegate PG --op OP_DIR --plugins DIR --worker EXE --root SRC --tmp DIR
                 --python PY

- plugin (persistent host and --fresh-process), exec, worker:, python: and replay
  each leave impl/<mode>/<output>.npy; `phasegate diff` on a saved impl output and its
  saved golden gives the run's verdict and max_abs_diff; `--impl replay:DIR
  --golden-data DIR` on the saved directory reproduces the run's verdict and metrics;
- a call that compared nothing leaves impl/<mode>/not_compared.txt with the reason: a
  crash or an exit status with no .npy; a wrong output shape with the output as the
  impl wrote it (diff: structural; replay: the same structural failure); an unavailable
  mode leaves no directory (replay: SKIPPED); a rerun replaces what an earlier run saved;
- the reference probes of a module with `inspect:` are saved next to the goldens.
Exit 0 pass, 1 fail.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


class Ctx:
    def __init__(self, a):
        self.a = a
        self.n = 0

    def run(self, impl, k, extra=(), op=None, python=False):
        self.n += 1
        report = os.path.join(self.a.tmp, f"r{self.n}.json")
        cmd = [self.a.phasegate, "run", "--op-dir", op or self.a.op, "--up-to-module", str(k),
               "--impl", impl, "--report", report, "--no-golden-cache", *extra]
        if python:
            cmd += ["--python", self.a.python]
        r = subprocess.run(cmd, capture_output=True, text=True)
        rep = json.load(open(report)) if os.path.exists(report) else None
        return r.returncode, rep, r.stdout + r.stderr

    def diff(self, a, b, *extra):
        r = subprocess.run([self.a.phasegate, "diff", a, b, "--json", *extra],
                           capture_output=True, text=True)
        return r.returncode, json.loads(r.stdout) if r.stdout.strip().startswith("{") else None


def tensor(rep, case, mode, name):
    for c in rep["checks"]:
        if c["id"] != case:
            continue
        for t in c["per_tensor"]:
            if t["mode"] == mode and t["name"] == name:
                return c, t
    return None, None


def npys(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".npy")) if os.path.isdir(d) else []


def same_verdict(ctx, data, case, mode, name, t):
    """phasegate diff on the saved pair agrees with the run's per_tensor entry."""
    rc, j = ctx.diff(os.path.join(data, case, "impl", mode, name + ".npy"),
                     os.path.join(data, case, "out", name + ".npy"),
                     "--atol", repr(t["atol"]), "--rtol", repr(t["rtol"]), "--rule", t["rule"])
    check(j is not None and rc == (0 if t["passed"] else 1),
          f"diff of saved {case}/impl/{mode}/{name}: exit {rc} matches passed={t['passed']}")
    check(j is not None and j.get("max_abs_diff") == t["max_abs_diff"] and
          j.get("mismatches") == t["mismatches"],
          f"diff of saved {case}/impl/{mode}/{name}: max_abs_diff and mismatches as in the run")


def plugin(ctx, a):
    data = os.path.join(a.tmp, "plugin")
    bad = os.path.join(a.plugins, "libfz_transposed.so")
    rc, rep, out = ctx.run("plugin:" + bad, 1, ["--modes", "sim,npu,cuda", "--save-data", data])
    check(rc == 1, f"transposed plugin FAILs (exit {rc})")
    for case in ("L1_canonical", "L2_basic", "L2_fp32"):
        for mode in ("sim", "npu"):
            check(npys(os.path.join(data, case, "impl", mode)) == ["scores.npy"],
                  f"plugin host: {case}/impl/{mode}/scores.npy saved")
        check(not os.path.exists(os.path.join(data, case, "impl", "cuda")),
              f"plugin: unavailable mode cuda of {case} leaves no directory")
    for case in ("L2_basic", "L2_fp32"):
        _, t = tensor(rep, case, "sim", "scores")
        check(t is not None and not t["passed"], f"{case} sim scores failed in the run")
        if t:
            same_verdict(ctx, data, case, "sim", "scores", t)
    # the saved directory replays: the same verdict and metrics, without the impl
    rc2, rep2, out2 = ctx.run("replay:" + data, 1, ["--modes", "sim,npu,cuda", "--golden-data",
                                                    data])
    check(rc2 == 1, f"replay of the saved impl outputs FAILs like the run (exit {rc2})")
    for case in ("L2_basic", "L2_fp32"):
        for mode in ("sim", "npu"):
            _, t1 = tensor(rep, case, mode, "scores")
            _, t2 = tensor(rep2, case, mode, "scores") if rep2 else (None, None)
            check(t1 and t2 and all(t1[k] == t2[k] for k in
                                    ("passed", "max_abs_diff", "max_rel_diff", "mismatches")),
                  f"replay {case}/{mode}: verdict and metrics as in the run")
        c2, _ = tensor(rep2, case, "sim", "scores") if rep2 else (None, None)
        check(c2 is not None and c2["per_mode_status"].get("cuda") == "SKIPPED",
              f"replay {case}: the mode that was unavailable is SKIPPED again")
    # a rerun with a correct plugin replaces the saved outputs (--fresh-process: no host)
    good = os.path.join(a.plugins, "libfz_none.so")
    rc, rep, out = ctx.run("plugin:" + good, 1, ["--modes", "sim", "--save-data", data,
                                                 "--fresh-process", "--case", "L2_basic"])
    check(rc == 0, f"correct plugin, --fresh-process: PASS (exit {rc})")
    _, t = tensor(rep, "L2_basic", "sim", "scores")
    if t:
        same_verdict(ctx, data, "L2_basic", "sim", "scores", t)
    # a crash: nothing was compared, the directory says why
    crash = os.path.join(a.plugins, "libfz_crash.so")
    rc, rep, out = ctx.run("plugin:" + crash, 1, ["--modes", "sim", "--save-data", data,
                                                  "--case", "L2_basic"])
    d = os.path.join(data, "L2_basic", "impl", "sim")
    note = os.path.join(d, "not_compared.txt")
    check(rc == 1 and npys(d) == [] and os.path.isfile(note),
          "crashing plugin: no outputs saved, not_compared.txt instead")
    if os.path.isfile(note):
        txt = open(note).read()
        check("SIGSEGV" in txt and "no outputs of mode 'sim' were compared" in txt,
              f"not_compared.txt says why: {txt.strip()}")


def exec_impl(ctx, a):
    data = os.path.join(a.tmp, "exec")
    impl = f"exec:{a.python} {os.path.join(a.root, 'tests', 'run', 'faultzoo', 'exec_fault.py')}"
    rc, rep, out = ctx.run(impl + " none", 3, ["--case", "L2_basic", "--save-data", data])
    check(rc == 0, f"exec impl PASSes at M3 (exit {rc}){'' if rc == 0 else out[-2000:]}")
    check(npys(os.path.join(data, "L2_basic", "impl", "sim")) == ["out.npy"],
          "exec: L2_basic/impl/sim/out.npy saved")
    _, t = tensor(rep, "L2_basic", "sim", "out")
    if t:
        check(t["atol"] == 2e-3, "M3 out: the contract's output-level atol 2e-3")
        same_verdict(ctx, data, "L2_basic", "sim", "out", t)
    # a wrong shape: what the impl wrote is kept (never compared), with the reason
    rc, rep, out = ctx.run(impl + " shape", 3, ["--case", "L2_basic", "--save-data", data])
    d = os.path.join(data, "L2_basic", "impl", "sim")
    note = os.path.join(d, "not_compared.txt")
    check(rc == 1 and npys(d) == ["out.npy"] and os.path.isfile(note),
          "exec wrong shape: out.npy as the impl wrote it, and not_compared.txt")
    if os.path.isfile(note):
        check("expected [1, 2, 40, 16]" in open(note).read(), "not_compared.txt names the shape")
    rc, j = ctx.diff(os.path.join(d, "out.npy"), os.path.join(data, "L2_basic", "out", "out.npy"))
    check(rc == 1 and j is not None and j.get("structural") is True,
          f"diff of the wrong-shape output: a structural mismatch (exit {rc})")
    summary = rep["first_failure"]["summary"] if rep and rep.get("first_failure") else None
    rc2, rep2, out2 = ctx.run("replay:" + data, 3, ["--case", "L2_basic", "--golden-data", data])
    ff = rep2.get("first_failure") if rep2 else None
    check(rc2 == 1 and ff and ff["failure_category"] == "structural" and summary and
          ff["summary"].endswith(summary.split("] ", 1)[-1]),
          f"replay of the saved wrong shape: the same structural failure (exit {rc2})")
    rc, rep, out = ctx.run(impl + " fail", 1, ["--case", "L2_basic", "--save-data", data])
    d = os.path.join(data, "L2_basic", "impl", "sim")
    check(rc == 1 and npys(d) == [] and os.path.isfile(os.path.join(d, "not_compared.txt")),
          "exec exit 3: nothing saved but not_compared.txt")


def worker_impl(ctx, a):
    """worker: (tools/worker's C worker: zeros) — FAILs on values, the zeros are saved."""
    data = os.path.join(a.tmp, "worker")
    rc, rep, out = ctx.run("worker:" + a.worker, 1, ["--case", "L2_basic", "--save-data", data])
    check(rc == 1, f"the zero worker FAILs (exit {rc})")
    check(npys(os.path.join(data, "L2_basic", "impl", "sim")) == ["scores.npy"],
          "worker: L2_basic/impl/sim/scores.npy saved")
    _, t = tensor(rep, "L2_basic", "sim", "scores") if rep else (None, None)
    if t:
        same_verdict(ctx, data, "L2_basic", "sim", "scores", t)


def python_impl(ctx, a):
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skip: python: impl needs torch")
        return
    op = os.path.join(a.root, "tests", "data", "pypto", "custom", "rms_gate")
    impl = "python:" + os.path.join(a.root, "tests", "impl", "python", "impls", "rms_gate_impl.py")
    data = os.path.join(a.tmp, "python")
    rc, rep, out = ctx.run(impl, 2, ["--case", "L2_canonical", "--save-data", data], op=op,
                           python=True)
    check(rc == 0, f"python: impl PASSes at M2 (exit {rc}){'' if rc == 0 else out[-2000:]}")
    c = rep["checks"][0] if rep else None
    names = sorted(t["name"] + ".npy" for t in c["per_tensor"]) if c else []
    got = npys(os.path.join(data, "L2_canonical", "impl", "sim"))
    check(names and got == names, f"python: impl/sim holds every boundary output {got}")
    for t in (c["per_tensor"] if c else []):
        same_verdict(ctx, data, "L2_canonical", "sim", t["name"], t)


def probes(ctx, a):
    """A module with `inspect:`: the impl's probes under impl/<mode>/, the reference's in
    out/, both as inspection_<name>.npy; the saved directory replays them."""
    op = os.path.join(a.root, "tests", "run", "inspection", "op")
    impl = "python:" + os.path.join(op, "impl.py")
    data = os.path.join(a.tmp, "probes")
    rc, rep, out = ctx.run(impl, 1, ["--case", "L2_basic", "--save-data", data], op=op,
                           python=True)
    check(rc == 0, f"probe op PASSes (exit {rc}){'' if rc == 0 else out[-2000:]}")
    case = os.path.join(data, "L2_basic")
    check(npys(os.path.join(case, "impl", "sim")) == ["inspection_acc.npy", "total.npy"],
          "probes: impl/sim holds the output and the impl's probe")
    check(npys(os.path.join(case, "out")) == ["inspection_acc.npy", "total.npy"],
          "probes: out/ holds the golden and the reference probe")
    rc, j = ctx.diff(os.path.join(case, "impl", "sim", "inspection_acc.npy"),
                     os.path.join(case, "out", "inspection_acc.npy"), "--atol", "1e-4",
                     "--rtol", "1e-4")
    check(rc == 0 and j is not None and j.get("n", 0) > 0,
          f"diff of the saved probe pair passes (exit {rc})")
    rc, rep2, out2 = ctx.run("replay:" + data, 1, ["--case", "L2_basic", "--golden-data", data],
                             op=op, python=True)
    check(rc == 0 and "inspection acc: no drift" in out2,
          f"replay of the saved probe op: PASS, probe compared (exit {rc})")


def main():
    p = argparse.ArgumentParser()
    for k in ("phasegate", "op", "plugins", "worker", "root", "tmp", "python"):
        p.add_argument("--" + k, required=True)
    a = p.parse_args()
    shutil.rmtree(a.tmp, ignore_errors=True)
    os.makedirs(a.tmp)
    ctx = Ctx(a)
    plugin(ctx, a)
    exec_impl(ctx, a)
    worker_impl(ctx, a)
    python_impl(ctx, a)
    probes(ctx, a)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
