"""phasegate exec-impl helper: the Python side of the `exec:COMMAND` and `worker:COMMAND`
protocols, kept under its old name for impls written against it.

The code lives in the phasegate package (tools/python/phasegate/protocol.py, installed
with phasegate, docs/python.md); this module re-exports its API unchanged:

    from pg_exec_helper import load_request
    req = load_request()
    if req.mode == "npu" and not have_npu():
        req.unavailable("no NPU on this host")
    q = req.input("q")
    ...
    req.write_output("scores", scores)   # cast to the declared dtype, shape checked

    def compute(req): ...
    if __name__ == "__main__":
        pg_exec_helper.main(compute)     # worker when PHASEGATE_WORKER=1, else one exec call

Only numpy is needed; this module never imports torch.
"""
import os
import sys

# In the source tree the package sits in tools/python beside this file and wins over an
# installed copy; installed, this file lies beside the package itself.
_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python")
if os.path.isdir(os.path.join(_SRC, "phasegate")) and _SRC not in sys.path:
    sys.path.insert(0, _SRC)
import phasegate.protocol as _protocol  # noqa: E402

UNAVAILABLE = _protocol.UNAVAILABLE
WORKER_PROTOCOL_VERSION = _protocol.WORKER_PROTOCOL_VERSION
Unavailable = _protocol.Unavailable
Structural = _protocol.Structural
Request = _protocol.Request
load_request = _protocol.load_request
serve = _protocol.serve
main = _protocol.main

__all__ = ["UNAVAILABLE", "WORKER_PROTOCOL_VERSION", "Unavailable", "Structural", "Request",
           "load_request", "serve", "main"]
