"""The workflow's file rules as `phasegate validate` warnings (docs/pypto.md "The golden
lint", "Suite shape", "Signatures"): each finding kind, positive and negative, on a
pypto-layout op built here (custom/lint_op/{eval,modules}), with its file:line:col.

    pypto_lint.py PHASEGATE PYTHON OUTDIR

The clean op gives no lint warning at all; then one file at a time is changed and the
exact warning (position included) must appear, and the others must not.
"""
import os
import shutil
import subprocess
import sys

pg, python, out = sys.argv[1:4]
pg = os.path.abspath(pg)
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
fails = []
HEADER = "# Derived from module_interfaces.yaml — do not hand-edit. On YAML changes, regenerate.\n"
CONTRACT = """schema_version: 1
op_name: lint_op
module_count: 2
primary_inputs:
  - {name: x, shape: "[M, N]", dtype: float32}
  - {name: w, shape: "[N]", dtype: float32}
modules:
  - id: 1
    name: scale
    inputs: [{name: x, source: primary}, {name: w, source: primary}]
    outputs: [{name: y, shape: "[M, N]", dtype: float32}]
  - id: 2
    name: relu
    inputs: [{name: y, source: module_1}]
    outputs: [{name: z, shape: "[M, N]", dtype: float32}]
final_outputs: [{name: z, source: module_2}]
"""
CASES = []
for level in range(1, 6):
    for i in range(2):
        CASES.append('  {"id": "L%d_c%d", "level": %d, "shape": {"M": 2, "N": 4}, '
                     '"precision": %s, "atol": 1e-4, "rtol": 1e-4}'
                     % (level, i, level, "false" if level == 1 else "true"))
SUITE = '{"op": "lint_op", "total_modules": 2,\n "cases": [\n' + ",\n".join(CASES) + "\n ]}\n"
FILES = {
    "eval/module_interfaces.yaml": CONTRACT,
    "eval/adversarial_suite.json": SUITE,
    "modules/lint_op_module1_golden.py": HEADER + '"""M1."""\nimport math\n\nimport torch\n\n\n'
    "def lint_op_module1_golden(x, w):\n    return x * w * math.sqrt(1.0)\n",
    "modules/lint_op_module12_golden.py": HEADER + "import torch\n\n\n"
    "def lint_op_module12_golden(\n        x,\n        w: torch.Tensor):\n"
    "    return torch.relu(x * w)\n",
    "lint_op_golden.py": "import torch\n\n\ndef lint_op_golden(*primary_inputs):\n"
    "    x, w = primary_inputs\n    return torch.relu(x * w)\n",
    "modules/lint_op_module1_impl.py": "import torch\n\n\n"
    "def lint_op_module1_wrapper(x, w, inspection_h=None):\n    return x * w\n",
}


def check(cond, what, text=""):
    if not cond:
        fails.append(what)
        print("FAIL:", what)
        if text:
            print(text)


def make(name, changes=None):
    op = os.path.join(out, name, "custom", "lint_op")
    files = dict(FILES)
    files.update(changes or {})
    for rel, text in files.items():
        path = os.path.join(op, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if text is not None:
            with open(path, "w") as f:
                f.write(text)
    return op


def validate(op):
    p = subprocess.run([pg, "validate", "--op-dir", op], capture_output=True, text=True)
    text = p.stdout + p.stderr
    print("$ phasegate validate --op-dir %s  (exit %d)\n%s" % (op, p.returncode, text))
    return p.returncode, text


def lint_lines(text):
    return [ln for ln in text.splitlines()
            if ln.endswith(("(golden-lint)", "(suite-shape)", "(signature)"))]


# negative: the clean op (header, torch + math, annotations and a def over three lines,
# *primary_inputs, an impl's inspection_ keyword) has no finding
op = make("clean")
rc, text = validate(op)
check(rc == 0 and not lint_lines(text), "clean op: no lint warning", text)

real = lambda op, rel: os.path.join(os.path.realpath(op), rel)  # noqa: E731 — goldens by real path

CASES_OF = [
    # (name, changes, expected "file:line:col: warning: ... (rule)" fragments, rule)
    ("no_header", {"modules/lint_op_module1_golden.py": FILES["modules/lint_op_module1_golden.py"]
                   .replace(HEADER, "# hand-written\n")},
     [("modules/lint_op_module1_golden.py", ":1:1: warning: no derived-file header")]),
    ("imports_golden", {"modules/lint_op_module12_golden.py": HEADER +
                        "import torch\nfrom lint_op_module1_golden import lint_op_module1_golden\n\n\n"
                        "def lint_op_module12_golden(x, w):\n"
                        "    return torch.relu(lint_op_module1_golden(x, w))\n"},
     [("modules/lint_op_module12_golden.py",
       ":3:6: warning: imports 'lint_op_module1_golden', another golden")]),
    ("numpy", {"modules/lint_op_module1_golden.py": HEADER + "import torch\nimport numpy as np\n\n\n"
               "def lint_op_module1_golden(x, w):\n    return x * w\n"},
     [("modules/lint_op_module1_golden.py", ":3:8: warning: imports numpy")]),
    ("pypto", {"lint_op_golden.py": "import torch\nfrom pypto import frontend\n\n\n"
               "def lint_op_golden(x, w):\n    return torch.relu(x * w)\n"},
     [("lint_op_golden.py", ":2:6: warning: imports 'pypto': a golden uses only torch")]),
    ("other_module", {"lint_op_golden.py": "import torch, scipy.special\n\n\n"
                      "def lint_op_golden(x, w):\n    return torch.relu(x * w)\n"},
     [("lint_op_golden.py", ":1:15: warning: imports 'scipy.special': a golden uses only torch")]),
    ("golden_order", {"modules/lint_op_module1_golden.py": HEADER + "import torch\n\n\n"
                      "def lint_op_module1_golden(w, x):\n    return x * w\n"},
     [("modules/lint_op_module1_golden.py", ":5:5: warning: golden lint_op_module1_golden(w, x) "
       "takes the primary inputs in another order: the contract's primary_inputs are (x, w)")]),
    ("golden_extra", {"modules/lint_op_module1_golden.py": HEADER + "import torch\n\n\n"
                      "def lint_op_module1_golden(x, w, eps):\n    return x * w\n"},
     [("modules/lint_op_module1_golden.py", ":5:5: warning: golden lint_op_module1_golden(x, w, eps) "
       "has parameter(s) 'eps' that are not primary inputs")]),
    ("impl_order", {"modules/lint_op_module1_impl.py": "def lint_op_module1_wrapper(w, x):\n"
                    "    return x * w\n"},
     [("modules/lint_op_module1_impl.py", ":1:5: warning: impl wrapper lint_op_module1_wrapper(w, x) "
       "takes the primary inputs in another order")]),
    ("impl_extra", {"modules/lint_op_module1_impl.py": "def lint_op_module1_wrapper(x, w, tile=64):\n"
                    "    return x * w\n"},
     [("modules/lint_op_module1_impl.py", ":1:5: warning: impl wrapper lint_op_module1_wrapper(x, w, "
       "tile) has parameter(s) 'tile' that are not primary inputs")]),
    ("impl_missing", {"modules/lint_op_module1_impl.py": "def lint_op_module1_wrapper(x):\n"
                      "    return x\n"},
     [("modules/lint_op_module1_impl.py", ":1:5: warning: impl wrapper lint_op_module1_wrapper(x) "
       "lacks 'w'")]),
    ("few_cases", {"eval/adversarial_suite.json": SUITE.replace(",\n" + CASES[5], "")},
     [("eval/adversarial_suite.json", ":7:3: warning: level L3 has 1 case (this one): the "
       "workflow's suites have at least 2 per level L1..L5")]),
    ("no_level", {"eval/adversarial_suite.json": SUITE.replace(",\n" + CASES[6], "")
                  .replace(",\n" + CASES[7], "")},
     [("eval/adversarial_suite.json", ":1:1: warning: level L4 has 0 cases")]),
    ("no_tolerance", {"eval/adversarial_suite.json": SUITE.replace(
        CASES[2], CASES[2].replace(', "precision": true, "atol": 1e-4, "rtol": 1e-4', ""))},
     [("eval/adversarial_suite.json", ":5:3: warning: case 'L2_c0' has no precision, atol, rtol")]),
]
for name, changes, expect in CASES_OF:
    op = make(name, changes)
    rc, text = validate(op)
    lines = lint_lines(text)
    check(rc == 0, "%s: validate still OK (exit %d)" % (name, rc), text)
    for rel, frag in expect:
        want = [ln for ln in lines if ln.startswith((real(op, rel) + frag, os.path.join(op, rel) + frag))]
        check(len(want) == 1, "%s: %s%s" % (name, rel, frag), text)
    check(len(lines) == len(expect), "%s: only the expected finding(s) (%d)" % (name, len(lines)), text)

# the seed's spelling from eval/ (relative paths): still the workflow's layout
op = make("from_eval", dict(CASES_OF[10][1]))
p = subprocess.run([pg, "validate", "--contract", "./module_interfaces.yaml", "--suite",
                    "adversarial_suite.json"], capture_output=True, text=True,
                   cwd=os.path.join(op, "eval"))
text = p.stdout + p.stderr
check(any("level L3 has 1 case" in ln and ln.endswith("(suite-shape)") for ln in text.splitlines()),
      "validate from eval/ with ./ paths: the suite-shape warning", text)

# before a run: the same warnings, printed by `phasegate run` before its cases
op = make("run_warns", dict(CASES_OF[5][1]))
p = subprocess.run([pg, "run", "--op-dir", op, "--impl", "python:" + os.path.join(
    op, "modules", "lint_op_module1_impl.py"), "--up-to-module", "1", "--modes", "cpu",
    "--case", "L2_c0", "--python", python, "--report", os.path.join(out, "run.json")],
    capture_output=True, text=True)
text = p.stdout + p.stderr
print(text)
check(any("takes the primary inputs in another order" in ln and ln.endswith("(signature)")
          for ln in text.splitlines()), "run prints the signature warning before the cases", text)

print("%d failure(s)" % len(fails))
sys.exit(1 if fails else 0)
