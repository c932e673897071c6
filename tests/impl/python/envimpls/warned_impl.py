"""rms_gate phase 1 that prints an environment-looking warning, then fails for a reason
of its own (tests/impl/python/run_env.py, scenario infra): the exception it raised is
why it failed, so this stays a kernel failure (FAIL, runtime), never infra."""
import sys


def rms_gate_module1_wrapper(x, w_norm, w_up):
    print("warning: No module named 'torch_npu' (optional; using the CPU path)", file=sys.stderr)
    raise ValueError("tile loop produced a tensor of the wrong length")
