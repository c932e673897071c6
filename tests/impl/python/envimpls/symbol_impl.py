"""rms_gate phase 1 whose extension cannot be loaded at call time: an undefined symbol,
as a pypto or torch_npu build of another CANN release gives
(tests/impl/python/run_env.py, scenario infra)."""


def rms_gate_module1_wrapper(x, w_norm, w_up):
    raise ImportError("/usr/local/lib/python3/dist-packages/pypto/lib/libtile_fwk_interface.so: "
                      "undefined symbol: _ZN3pto6Tensor7reshapeERKSt6vectorIlSaIlEE")
