"""rms_gate phase 1 as the pypto workflow's drivers start: it reads TILE_FWK_DEVICE_ID
(here at import time, as `ST_DEVICE_ID = int(os.environ.get("TILE_FWK_DEVICE_ID", 0))`
does, and again per call) and refuses to run on another device than PG_EXPECT_DEVICE
(tests/impl/python/run_env.py, scenario device_id)."""
import os

from rms_gate_ref import rms

AT_IMPORT = os.environ.get("TILE_FWK_DEVICE_ID")


def rms_gate_module1_wrapper(x, w_norm, w_up):
    want = os.environ["PG_EXPECT_DEVICE"]
    now = os.environ.get("TILE_FWK_DEVICE_ID")
    print(f"TILE_FWK_DEVICE_ID at import {AT_IMPORT}, at the call {now}")
    if AT_IMPORT != want or now != want:
        raise RuntimeError(f"launched for device {now} (at import {AT_IMPORT}), expected {want}")
    return rms(x, w_norm)
