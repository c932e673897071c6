#!/usr/bin/env python3
"""tests/impl/worker_side: a Python impl for the protocol tests, written like a user's
(one function + pg_exec_helper.main), whose behaviour per call comes from the case's
knob "behave":

  ok           writes every output filled with the knob "value" (default 1)
  noisy        the same, after writing to fd 1 every way a program can: print(),
               os.write(1, …), libc printf/write through ctypes, a child process
  raise        raises ValueError("fake_impl: planted failure")
  unavailable  req.unavailable("fake_impl: no such device")
  exit77       sys.exit(77), as an exec impl written for `exec:` would
  exit0        sys.exit(0) in the middle of a call
"""
import ctypes
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import pg_exec_helper  # noqa: E402


def make_noise():
    print("NOISE-print: stray print to stdout")
    sys.stdout.flush()
    os.write(1, b"NOISE-oswrite: os.write(1, ...)\n")
    libc = ctypes.CDLL(None)
    libc.printf(b"NOISE-printf: libc printf\n")
    libc.fflush(None)
    msg = b"NOISE-libcwrite: libc write(1, ...)\n"
    libc.write(1, msg, len(msg))
    subprocess.run(["/bin/sh", "-c", "echo NOISE-child: a child process on fd 1"], check=True)


def compute(req):
    behave = req.knobs.get("behave", "ok")
    if behave == "raise":
        raise ValueError("fake_impl: planted failure")
    if behave == "unavailable":
        req.unavailable("fake_impl: no such device")
    if behave == "exit77":
        sys.exit(77)
    if behave == "exit0":
        sys.exit(0)
    if behave == "noisy":
        make_noise()
    value = float(req.knobs.get("value", 1.0))
    for name in req.output_names:
        spec = req.outputs[name]
        req.write_output(name, np.full([int(x) for x in spec["shape"]], value))


if __name__ == "__main__":
    pg_exec_helper.main(compute)
