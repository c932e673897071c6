"""rms_gate phase 1 as a pypto impl (the stand-in pypto of tests/impl/python/impls) that
checks the device it was launched for in mode npu: TILE_FWK_DEVICE_ID and
torch.npu.current_device() (the stand-in torch_npu of npurec/ records set_device) must
both be PG_EXPECT_DEVICE (tests/impl/python/run_env.py, scenario device_id)."""
import os

import pypto  # noqa: F401 — a pypto impl gets host tensors in mode npu
import torch

from rms_gate_ref import rms


def rms_gate_module1_wrapper(x, w_norm, w_up):
    want = os.environ["PG_EXPECT_DEVICE"]
    env, cur = os.environ.get("TILE_FWK_DEVICE_ID"), torch.npu.current_device()
    print(f"npu: TILE_FWK_DEVICE_ID {env}, torch.npu.current_device() {cur}")
    if env != want or str(cur) != want:
        raise RuntimeError(f"launched for device {env} / {cur}, expected {want}")
    return rms(x, w_norm)
