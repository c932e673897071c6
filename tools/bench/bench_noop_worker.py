"""A no-op worker for bench_persist: output y = input x, through the documented helper
(tools/pg_exec_helper.py). With worker protocol v1.1 (the default under phasegate) the
input is a view of the call memory and y is written in place; with
PHASEGATE_WORKER_NO_SHM=1 it is protocol v1: .npy files in and out."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pg_exec_helper  # noqa: E402


def compute(req):
    y = req.output("y")   # its buffer in call memory (v1.1), else None
    if y is not None:
        y[...] = req.input("x")
    else:
        req.write_output("y", req.input("x"))


if __name__ == "__main__":
    pg_exec_helper.main(compute)
