#!/usr/bin/env python3
"""tests/run/python_golden: Python goldens of pypto op directories (docs/design.md §3, §5), end to
end through the phasegate CLI, on the fixture op mm_softmax in both conventions
(data/verifier: modules/<op>_module<suffix>_golden.py + <op>_golden.py; data/pro:
golden_stage_fn + modules/<op>_golden_stage<suffix>.py + <op>_golden_cpu.py), torch
goldens and no phasegate `golden:` key, with a numpy exec impl.

    python_golden_test.py PHASEGATE TOOLS_DIR DATA_DIR OUT_DIR SCENARIO

Scenarios: run_verifier, run_pro, selftest, missing_golden, golden_errors, cache,
one_process, interpreter (finding 21/7: an interpreter without numpy or torch is one
error for the run; phasegate's numbers survive the barrier). Exit 0 pass, 1 fail, 77 skipped (torch not importable).
"""
import json
import os
import re
import shutil
import subprocess
import sys

PG, TOOLS, DATA, OUT, SCENARIO = sys.argv[1:6]
failures = []


def check(cond, what, detail=""):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")
        if detail:
            print(detail)
    else:
        print(f"ok: {what}")


def fixture(conv, name=None):
    """A private copy of the fixture op directory of a convention (tests may edit it)."""
    dst = os.path.join(OUT, name or conv, "custom", "mm_softmax")
    shutil.rmtree(os.path.dirname(os.path.dirname(dst)), ignore_errors=True)
    shutil.copytree(os.path.join(DATA, conv, "custom", "mm_softmax"), dst)
    return dst


def env(**extra):
    e = dict(os.environ)
    e["PHASEGATE_PYTHON"] = sys.executable
    e["PG_TOOLS_DIR"] = TOOLS
    # the fixtures' goldens import _trace (test instrumentation shared by both layouts)
    e["PYTHONPATH"] = DATA + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.setdefault("PHASEGATE_CACHE_DIR", os.path.join(OUT, "cache"))
    e.pop("PHASEGATE_SERVE_CONTROL", None)
    e.update(extra)
    return e


def pg(*args, **extra):
    p = subprocess.run([PG, *args], capture_output=True, text=True, env=env(**extra),
                       timeout=300)
    return p.returncode, p.stdout + p.stderr


def run(op_dir, k, *more, bug=False, **extra):
    impl = f"exec:{sys.executable} {DATA}/mm_softmax_impl.py" + (" --bug" if bug else "")
    report = os.path.join(OUT, f"report-M{k}.json")
    if os.path.exists(report):
        os.remove(report)
    rc, out = pg("run", "--op-dir", op_dir, "--impl", impl, "--up-to-module", str(k),
                 "--report", report, *more, **extra)
    rep = json.load(open(report)) if os.path.exists(report) else None
    return rc, out, rep


def edit(path, old, new):
    text = open(path).read()
    assert old in text, f"{path}: no '{old}'"
    open(path, "w").write(text.replace(old, new))


def trace_lines(path):
    return open(path).read().splitlines() if os.path.exists(path) else []


# ---------------------------------------------------------------- scenarios

def run_convention(conv):
    op = fixture(conv)
    rc, out = pg("validate", "--op-dir", op)
    # the workflow's own file rules (docs/pypto.md "The golden lint", "Suite shape") may
    # warn about these test fixtures (they import a tracer); nothing else may
    other = [ln for ln in out.splitlines() if ": warning:" in ln and
             not ln.endswith(("(golden-lint)", "(suite-shape)", "(signature)"))]
    check(rc == 0 and "— OK" in out and "has no golden" not in out and not other,
          f"{conv}: validate OK without warnings", out)
    for k in (1, 2, 3):
        rc, out, rep = run(op, k)
        check(rc == 0 and f"mm_softmax M{k}: PASS  4 passed" in out,
              f"{conv}: M{k} passes against the Python cumulative golden", out)
    rc, out, rep = run(op, 1, bug=True)
    check(rc == 0, f"{conv}: the M2 bug leaves M1 passing", out)
    rc, out, rep = run(op, 3, bug=True, )
    ff = (rep or {}).get("first_failure") or {}
    where = ff.get("earliest_failing_boundary", ff.get("failing_module_boundary"))
    check(rc == 1 and ff.get("failure_category") == "precision" and where in (2, "M2"),
          f"{conv}: the M2 bug fails M3 on precision, found at boundary 2", out)


def scenario_run_verifier():
    run_convention("verifier")


def scenario_run_pro():
    run_convention("pro")


def scenario_selftest():
    for conv in ("verifier", "pro"):
        rc, out = pg("selftest", "--op-dir", fixture(conv))
        check(rc == 0 and "selftest mm_softmax: PASS (2/2 comparisons: cumulative golden 3 == "
              "op-level golden)" in out, f"{conv}: selftest passes over seeds 0, 7", out)
    # the seed's spelling
    rc, out = pg("--self-test", "--op-dir", fixture("pro"))
    check(rc == 0 and "PASS" in out, "pro: --self-test passes", out)
    # an op-level golden that disagrees with the stage goldens
    op = fixture("verifier", "broken_op")
    edit(f"{op}/mm_softmax_golden.py", "* g.double()", "* (g.double() * 1.1)")
    rc, out = pg("selftest", "--op-dir", op)
    check(rc == 1 and "seed=0 shape={T=4,H=8,N=16} out: FAIL" in out and
          "selftest mm_softmax: FAIL (0/2 comparisons passed" in out,
          "selftest fails when the op golden disagrees with the stage golden", out)
    op = fixture("pro", "broken_cpu")
    edit(f"{op}/mm_softmax_golden_cpu.py", "logits.max(", "logits.min(")
    edit(f"{op}/mm_softmax_golden_cpu.py", "e / e.sum(", "e / 2 / e.sum(")
    rc, out = pg("selftest", "--op-dir", op)
    check(rc == 1 and "FAIL" in out, "pro: selftest fails when <op>_golden_cpu disagrees", out)
    # built-in steps and Python goldens of the same phases: the C reference is checked
    # against the user's torch golden
    op = fixture("verifier", "both")
    contract = f"{op}/eval/module_interfaces.yaml"
    edit(contract, '    outputs: [{name: y, shape: "[T, N]", dtype: float32}]\n',
         '    outputs: [{name: y, shape: "[T, N]", dtype: float32}]\n'
         '    golden: ["y = matmul(x, w)"]\n')
    edit(contract, '    outputs: [{name: p, shape: "[T, N]", dtype: float32}]\n',
         '    outputs: [{name: p, shape: "[T, N]", dtype: float32}]\n'
         '    golden: ["p = softmax(y, axis=-1)"]\n')
    edit(contract, '    outputs: [{name: out, shape: "[T, N]", dtype: float16}]\n',
         '    outputs: [{name: out, shape: "[T, N]", dtype: float16}]\n'
         '    golden: ["out = mul(p, g)"]\n')
    rc, out = pg("selftest", "--op-dir", op)
    want = ["M1 built-in vs Python: seed=0 shape={T=4,H=8,N=16} y: PASS",
            "M2 built-in vs Python: seed=7 shape={T=4,H=8,N=16} p: PASS",
            "M3 built-in vs Python: seed=7 shape={T=4,H=8,N=16} out: PASS",
            "seed=7 shape={T=4,H=8,N=16} out: PASS",
            "selftest mm_softmax: PASS (8/8 comparisons"]
    check(rc == 0 and all(w in out for w in want),
          "selftest compares the built-in cumulative goldens with the Python ones", out)
    edit(contract, "softmax(y, axis=-1)", "softmax(y, axis=0)")
    rc, out = pg("selftest", "--op-dir", op)
    check(rc == 1 and "M1 built-in vs Python: seed=0 shape={T=4,H=8,N=16} y: PASS" in out and
          "M2 built-in vs Python: seed=0 shape={T=4,H=8,N=16} p: FAIL" in out and
          "first failure: M2 built-in vs Python: seed=0" in out,
          "selftest fails a built-in golden that disagrees with the Python one", out)


def scenario_missing_golden():
    op = fixture("verifier", "missing")
    os.remove(f"{op}/modules/mm_softmax_module12_golden.py")
    rc, out = pg("validate", "--op-dir", op)
    check(rc == 0 and "warning: module 2 'softmax' has no golden: no `golden:` steps or plugin, "
          "no modules/mm_softmax_module12_golden.py; run --up-to-module 2 will fail" in out,
          "validate warns about the module without a golden", out)
    rc, out, rep = run(op, 2)
    check(rc == 2 and "phase 2 of op 'mm_softmax' has no golden: module 2 'softmax' has no "
          "golden" in out and "[ERROR]" not in out and "[PASS]" not in out and rep is not None
          and rep["status"] == "ERROR" and rep["cases_total"] == 0
          and rep["first_failure"]["failure_category"] == "structural",
          "run of that phase is one clear error before any case (an ERROR report, no case)", out)
    rc, out, rep = run(op, 3)
    check(rc == 0 and "4 passed" in out, "phase 3 still runs on its own cumulative golden", out)
    # Pro: golden_stage_fn naming a file that is not there
    op = fixture("pro", "missing_pro")
    edit(f"{op}/eval/module_interfaces.yaml", "golden_stage_fn: mm_softmax_golden_stage12\n",
         "golden_stage_fn: mm_softmax_stage_two\n")
    os.remove(f"{op}/modules/mm_softmax_golden_stage12.py")
    rc, out = pg("validate", "--op-dir", op)
    check(rc == 0 and "warning: golden_stage_fn 'mm_softmax_stage_two' of module 2: no file "
          f"{os.path.realpath(op)}/modules/mm_softmax_stage_two.py" in out and
          "module 2 'softmax' has no golden: no `golden:` steps or plugin, no "
          "modules/mm_softmax_stage_two.py" in out,
          "validate names the file golden_stage_fn expects", out)
    rc, out, rep = run(op, 2)
    check(rc == 2 and "has no golden" in out and rep is not None and rep["status"] == "ERROR",
          "pro: run errors (an ERROR report)", out)


def scenario_golden_errors():
    op = fixture("verifier", "errors")
    leak = os.path.join(OUT, "leak.txt")
    edit(f"{op}/modules/mm_softmax_module1_golden.py", "    return torch.matmul(x, w)\n",
         "    import os\n"
         "    s = str(torch.matmul(x, w))\n"
         "    open(os.environ['PG_LEAK_FILE'], 'w').write(s)\n"
         "    raise ValueError(s)\n")
    rc, out, rep = run(op, 1, "--case", "L2_canonical", "--no-golden-cache", PG_LEAK_FILE=leak)
    text = out + json.dumps(rep)
    values = re.findall(r"\d+\.\d{3,}", open(leak).read()) if os.path.exists(leak) else []
    leaked = [v for v in values if v in text]
    check(len(values) > 10 and not leaked,
          f"a golden raising ValueError(str(tensor)) leaks none of its {len(values)} values",
          f"leaked: {leaked[:5]}\n{out}")
    ff = (rep or {}).get("first_failure") or {}
    check(rc == 2 and ff.get("failure_category") == "infra" and
          "mm_softmax_module1_golden.py::mm_softmax_module1_golden" in out and
          "ValueError" in out and "<redacted>" in out,
          "the case is ERROR / infra naming the golden's file and function", out)
    # a golden that kills its worker: every case an ERROR, the runner carries on
    edit(f"{op}/modules/mm_softmax_module12_golden.py", "    y = torch.matmul(x, w)\n",
         "    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n")
    rc, out, rep = run(op, 2, "--no-golden-cache")
    check(rc == 2 and rep is not None and rep.get("cases_total") == 4 and
          out.count("mm_softmax_module12_golden.py::mm_softmax_module12_golden") >= 4 and
          "crashed with SIGKILL" in out and
          (rep.get("first_failure") or {}).get("failure_category") == "infra",
          "a golden that crashes its worker is an ERROR per case, not a crash", out)
    # a golden file without the function the convention names
    edit(f"{op}/modules/mm_softmax_module123_golden.py", "def mm_softmax_module123_golden(",
         "def mm_softmax_golden_typo(")
    rc, out, rep = run(op, 3, "--case", "L2_canonical", "--no-golden-cache")
    check(rc == 2 and "has no function 'mm_softmax_module123_golden'" in out and
          (rep.get("first_failure") or {}).get("failure_category") == "infra",
          "a missing golden function is an ERROR naming it", out)


def fake_python(name, body):
    """An executable shell script OUT/NAME wrapping this interpreter (body: shell lines
    before the final exec)."""
    path = os.path.join(OUT, name)
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\n{body}exec '{sys.executable}' \"$@\"\n")
    os.chmod(path, 0o755)
    return path


def hiding(name, module):
    """A fake interpreter in which `import MODULE` fails: sitecustomize on a private
    PYTHONPATH sets sys.modules[MODULE] = None."""
    site = os.path.join(OUT, f"site_{name}")
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "sitecustomize.py"), "w") as f:
        f.write(f"import sys\nsys.modules[{module!r}] = None\n")
    return fake_python(name, f"PYTHONPATH='{site}'${{PYTHONPATH:+:$PYTHONPATH}}\n"
                             "export PYTHONPATH\n")


def scenario_interpreter():
    """Finding 21/7: an interpreter that cannot run the Python goldens is ONE error for
    the run (exit 2, before any case), naming the interpreter, what it lacks and how to
    choose another — not an ERROR per case; and phasegate's own numbers in a golden
    worker's failure survive the barrier while the worker's are still redacted."""
    op = fixture("verifier", "interp")
    for name, module in (("nonumpy", "numpy"), ("notorch", "torch")):
        py = hiding(name, module)
        for how, more, extra in (("--python", ("--python", py), {}),
                                 ("PHASEGATE_PYTHON", (), {"PHASEGATE_PYTHON": py})):
            rc, out, rep = run(op, 2, *more, **extra)
            errors = [l for l in out.splitlines() if "error" in l.lower()]
            check(rc == 2 and len(errors) == 1 and "[ERROR]" not in out,
                  f"{name} via {how}: exit 2 and exactly one error line, no case ran", out)
            line = errors[0] if errors else ""
            check(f"'{py}'" in line and f"{module} (" in line and "--python" in line and
                  "PHASEGATE_PYTHON" in line and "not importable" in line,
                  f"{name} via {how}: the line names the interpreter, {module}, --python "
                  "and PHASEGATE_PYTHON", line)
            if module == "torch":
                check("_golden.py imports it" in line, f"{name}: names a golden importing torch",
                      line)
            check(rep is None or (rep.get("first_failure") or {}).get("failure_category")
                  == "infra", f"{name} via {how}: no report, or one saying infra", json.dumps(rep))
    # passes the preflight, but the worker dies before its handshake, printing a value
    py = fake_python("diesatstart", "case \"$2\" in phasegate.worker) echo 'boom 0.84217' >&2; "
                                    "exit 1;; esac\n")
    rc, out, rep = run(op, 1, "--case", "L2_canonical", "--no-golden-cache", "--python", py)
    # (the impl room cuts its sentence at 300 characters: the version may be cut off)
    check(rc == 2 and "ended before its handshake (exit status 1)" in out and
          "the first line on fd 4 must be" in out and
          "exit status <redacted>" not in out and "fd <redacted>" not in out and
          "\"phasegate_worker\": <redacted>" not in out,
          "phasegate's exit status, fd and protocol version survive the barrier", out)
    check("boom <redacted>" in out and "0.84217" not in out + json.dumps(rep),
          "the worker's own output is still redacted", out)


def scenario_cache():
    op = fixture("verifier", "cache")
    trace = os.path.join(OUT, "trace.txt")
    cache = os.path.join(OUT, "golden-cache")
    for p in (trace, cache):
        shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else \
            (os.path.exists(p) and os.remove(p))
    kw = dict(PG_GOLDEN_TRACE=trace, PHASEGATE_CACHE_DIR=cache)
    rc, out, rep = run(op, 1, "--case", "L2_canonical", **kw)
    check(rc == 0 and len(trace_lines(trace)) == 1, "first run computes the golden", out)
    rc, out, rep = run(op, 1, "--case", "L2_canonical", **kw)
    check(rc == 0 and len(trace_lines(trace)) == 1, "second run takes it from the cache", out)
    with open(f"{op}/modules/mm_softmax_module1_golden.py", "a") as f:
        f.write("\n# edited: the cache key hashes this file\n")
    rc, out, rep = run(op, 1, "--case", "L2_canonical", **kw)
    check(rc == 0 and len(trace_lines(trace)) == 2, "an edited golden is computed again", out)


def scenario_one_process():
    op = fixture("verifier", "one_process")
    trace = os.path.join(OUT, "trace1.txt")
    if os.path.exists(trace):
        os.remove(trace)
    rc, out, rep = run(op, 3, "--no-golden-cache", bug=True, PG_GOLDEN_TRACE=trace)
    lines = open(trace).read().splitlines() if os.path.exists(trace) else []
    pids = {ln.split()[0] for ln in lines}
    fns = {ln.split()[1] for ln in lines}
    check(rc == 1 and len(lines) >= 4 and len(pids) == 1 and
          fns == {"mm_softmax_module1_golden", "mm_softmax_module12_golden",
                  "mm_softmax_module123_golden"},
          f"one golden worker process served all {len(lines)} golden calls (cases and "
          "bisection)", out + "\n".join(lines))
    os.remove(trace)
    rc, out, rep = run(op, 2, "--no-golden-cache", "--jobs", "2", PG_GOLDEN_TRACE=trace)
    lines = open(trace).read().splitlines() if os.path.exists(trace) else []
    check(rc == 0 and len(lines) == 4 and len({ln.split()[0] for ln in lines}) <= 2,
          "with --jobs 2: at most one golden worker per job", out + "\n".join(lines))
    # Under CTest: the op's `phasegate serve` daemon keeps the golden worker warm, so two
    # runs (two case tests) share one golden process; stopping the daemon ends it.
    ctl = os.path.join(OUT, "serve_ctl")
    shutil.rmtree(ctl, ignore_errors=True)
    rc, out = pg("serve", "--control", ctl)   # the fixture's impl is exec: (not kept)
    check(rc == 0, "serve starts", out)
    os.remove(trace)
    for case_run in range(2):
        rc2, out2, rep = run(op, 2, "--no-golden-cache", "--serve-control", ctl,
                             PG_GOLDEN_TRACE=trace)
        check(rc2 == 0, f"served run {case_run + 1} passes", out2)
    lines = trace_lines(trace)
    pg("serve", "--control", ctl, "--stop")
    check(len(lines) == 8 and len({ln.split()[0] for ln in lines}) == 1,
          "two runs through one serve daemon: one golden worker served all 8 golden calls",
          "\n".join(lines))


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIPPED: torch is not importable; the fixture's goldens are torch code")
        return 77
    os.makedirs(OUT, exist_ok=True)
    globals()[f"scenario_{SCENARIO}"]()
    print(f"{len(failures)} failure(s)" if failures else "all ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
