"""tools/stress: the worker (protocol v1, through pg_exec_helper) of the `phasegate serve`
load and fault tests (serve_load.sh, serve_faults.sh). Op `load`: every output is
2 * the first input, so an answer is a function of what its client sent and cross-talk
between clients shows. A case whose id starts with "crash" ends the worker with SIGSEGV;
one starting with "slow" takes 0.3 s and one starting with "hang" 30 s (a test kills
something mid-call)."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pg_exec_helper  # noqa: E402


def compute(req):
    if req.case.startswith("crash"):
        os.kill(os.getpid(), signal.SIGSEGV)
    if req.case.startswith("slow"):
        time.sleep(0.3)
    if req.case.startswith("hang"):
        time.sleep(30)
    x = req.input(req.raw["inputs"][0]["name"])
    for name in req.output_names:
        req.write_output(name, x * 2)


if __name__ == "__main__":
    pg_exec_helper.main(compute)
