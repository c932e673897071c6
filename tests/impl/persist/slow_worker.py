"""A worker (phasegate's Python worker protocol, tools/python) that records its pid in
$PG_OUTLIVE_DIR with every call and then sleeps: a call the runner is killed in the
middle of (tests/impl/persist/outlive.py). With --fork, each call also forks a child
that calls setsid() and does the same."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "tools", "python"))
from phasegate.protocol import serve  # noqa: E402


FORK = "--fork" in sys.argv   # also fork a child that leaves the group, and sleeps too


def call(req):
    if FORK and os.fork() == 0:
        os.setsid()   # a fork inherits no death signal: only the runner's watchdog ends it
    with open(os.path.join(os.environ["PG_OUTLIVE_DIR"], str(os.getpid())), "a") as f:
        f.write(req.case + "\n")
    time.sleep(30)


serve(call)
