"""Test instrumentation shared by the fixture's goldens (not part of the workflow's
files): with PG_GOLDEN_TRACE set, each golden call appends "<pid> <function>" to that
file, so tests/run/python_golden can count golden calls and worker processes."""
import os


def trace(name):
    path = os.environ.get("PG_GOLDEN_TRACE")
    if path:
        with open(path, "a") as f:
            f.write(f"{os.getpid()} {name}\n")
