"""A worker (phasegate's Python worker protocol, tools/python) that records its pid in
$PG_OUTLIVE_DIR with every call and then sleeps: a call the runner is killed in the
middle of (tests/impl/persist/outlive.py)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "tools", "python"))
from phasegate.protocol import serve  # noqa: E402


def call(req):
    with open(os.path.join(os.environ["PG_OUTLIVE_DIR"], str(os.getpid())), "a") as f:
        f.write(req.case + "\n")
    time.sleep(30)


serve(call)
