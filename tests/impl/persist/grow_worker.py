"""A worker that allocates 4 GiB on its second call (for --memory-limit tests)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
import numpy as np  # noqa: E402
import pg_exec_helper  # noqa: E402

calls = 0


def impl(req):
    global calls
    calls += 1
    if calls == 2:
        hog = np.ones(1 << 29, dtype=np.float64)  # 4 GiB
        print(hog.sum())
    for name, spec in req.outputs.items():
        req.write_output(name, np.zeros(spec["shape"], dtype=np.float32))


pg_exec_helper.main(impl)
