"""rms_gate phase 1 whose import fails as an Ascend host without the CANN environment
fails: a shared library of the collective stack is not on the loader path
(tests/impl/python/run_env.py, scenario infra)."""
import ctypes

# what `import torch_npu` does on a host where set_env.sh was not sourced
raise OSError("libhccl.so: cannot open shared object file: No such file or directory")


def rms_gate_module1_wrapper(x, w_norm, w_up):  # never reached
    return ctypes, x
