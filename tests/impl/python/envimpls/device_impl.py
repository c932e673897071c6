"""rms_gate phase 1 that fails as a device run fails, by PG_DEVICE_FAULT
(tests/impl/python/run_env.py, scenario labels): the device log line the pypto
verifier's failure table keys on, printed as CANN prints it with
ASCEND_SLOG_PRINT_TO_STDOUT=1, then the error the host sees.

  aicore             an aicore exception naming the CCE file, then a stream error
  tile_shape         "L0A size exceeded" while compiling the tile shapes
  oom                "rtMalloc failed"
  host_crash         the host process dies by SIGSEGV
  workspace_overlap  a workspace overlap warning, and outputs that come back corrupted
"""
import os
import signal
import sys

import torch

from rms_gate_ref import rms


def rms_gate_module1_wrapper(x, w_norm, w_up):
    fault = os.environ.get("PG_DEVICE_FAULT", "")
    if fault == "aicore":
        print("[ERROR] RUNTIME: aicore exception, core id 3, error info 0x8000000, "
              "kernel rms_gate_module1 at rms_gate_module1.cce:212", file=sys.stderr)
        raise RuntimeError("ACL stream synchronize failed, error code 507015")
    if fault == "tile_shape":
        raise RuntimeError("compile rms_gate_module1: L0A size exceeded (tile 512x512 fp16 "
                           "needs 524288 bytes, 65536 available)")
    if fault == "oom":
        print("[ERROR] RUNTIME: rtMalloc failed, size 68719476736", file=sys.stderr)
        raise RuntimeError("device memory allocation failed")
    if fault == "host_crash":
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    xn = rms(x, w_norm)
    if fault == "workspace_overlap":
        print("[WARNING] pypto: workspace overlap between tensors 'xn' and 'acc'",
              file=sys.stderr)
        xn = xn.clone()
        xn[: xn.shape[0] // 2] = xn[: xn.shape[0] // 2] * torch.tensor(1.5, dtype=xn.dtype)
    return xn
