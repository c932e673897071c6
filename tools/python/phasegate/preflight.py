"""`python3 -m phasegate.preflight [PATH ...]`: can this interpreter run phasegate's
Python side? The runner asks once, before any case runs (runner/impl/python.c,
pg_python_preflight), so that an interpreter without numpy — or without torch where the
impl module or the Python goldens import it — is one error naming the interpreter, not
one per case.

Stdlib only, and nothing is imported: numpy and torch are looked up (importlib.util.
find_spec), never loaded, so the check costs an interpreter start. PATH: Python files
(or directories of staged *_impl.py files) the worker will import; a module-level `import torch` / `from
torch… import` outside a try block makes torch required. Prints one JSON line:

    {"executable": "/usr/bin/python3", "version": "3.11.2",
     "lacks": [{"module": "numpy", "why": "phasegate's Python worker imports it"}, …],
     "versions": {"numpy": "1.24.2", "torch": "1.13.1", "torch_npu": null, "pypto": null},
     "missing_env": [{"mode": "npu", "variable": "ASCEND_HOME_PATH", "why": "not set: …"}]}

The versions come from the installed packages' metadata (nothing is imported): the
report's provenance names them (docs/runner.md "One run, one verdict").
"""
import ast
import importlib.util
import json
import os
import platform
import sys


def _found(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):   # sys.modules[name] = None, a broken parent
        return False


def _requires(path, name):
    """Whether the file imports `name` unconditionally at module level."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return False   # the worker reports an unreadable module itself, per call
    for node in tree.body:
        if isinstance(node, ast.Import):
            if any(a.name.split(".")[0] == name for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").split(".")[0] == name:
                return True
    return False


def _files(paths):
    """The files of paths; a directory (python:DIR, the staged files of every phase):
    its *_impl.py files, else every .py file in it."""
    for p in paths:
        if os.path.isdir(p):
            names = sorted(n for n in os.listdir(p) if n.endswith(".py"))
            impls = [n for n in names if n.endswith("_impl.py")]
            for n in impls or names:
                yield os.path.join(p, n)
        elif p.endswith(".py"):
            yield p


def _version(name):
    """The installed distribution's version, or None (not installed, or no metadata)."""
    try:
        from importlib import metadata
        return metadata.version(name)
    except Exception:   # PackageNotFoundError, or a Python without importlib.metadata
        return None


# The environment lines the pypto workflow sources before a mode can run (the CANN
# toolkit's set_env.sh exports ASCEND_HOME_PATH; the seed's _mode_available("npu") checks
# it): mode -> [(variable, the line that sets it)]. TILE_FWK_DEVICE_ID is not listed:
# phasegate's worker sets it for every call from the device it was given. One table, read
# by this preflight (the run's provenance says what is set) and by the worker (a mode
# whose line is missing is unavailable, naming the variable). docs/pypto.md
# "Devices and the environment".
ENV_LINES = {
    "npu": [("ASCEND_HOME_PATH", "source <CANN>/set_env.sh, e.g. "
             "source /usr/local/Ascend/ascend-toolkit/set_env.sh")],
}


def missing_env_lines(mode, environ):
    """[(variable, the line that sets it)] of mode's environment lines that environ lacks
    (unset, empty, or naming no directory where a path is meant)."""
    out = []
    for var, line in ENV_LINES.get(mode, ()):
        value = environ.get(var, "")
        if not value:
            out.append((var, f"not set: {line}"))
        elif var.endswith("_PATH") and not os.path.isdir(value):
            out.append((var, f"{var}={value} is not a directory: {line}"))
    return out


def main(argv):
    lacks = []
    if not _found("numpy"):
        lacks.append({"module": "numpy", "why": "phasegate's Python worker imports it"})
    users = [f for f in _files(argv) if _requires(f, "torch")]
    if users and not _found("torch"):
        more = f" and {len(users) - 1} more file(s)" if len(users) > 1 else ""
        lacks.append({"module": "torch", "why": f"{users[0]} imports it{more}"})
    versions = {n: _version(n) for n in ("numpy", "torch", "torch_npu", "pypto")}
    # every mode's environment lines: which are missing here (the worker makes those
    # modes unavailable per call; the runner warns once, before any case)
    env = [{"mode": m, "variable": v, "why": why}
           for m in sorted(ENV_LINES) for v, why in missing_env_lines(m, os.environ)]
    print(json.dumps({"executable": sys.executable, "version": platform.python_version(),
                      "lacks": lacks, "versions": versions, "missing_env": env}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
