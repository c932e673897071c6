"""An impl module that is wrong on purpose (tests/impl/python), for op rms_gate: phase 1
returns two leaves where the phase has one output, phase 12's function is missing,
phase 123 raises; `custom_name` is for the `::FUNCTION` form."""
import sys


def rms_gate_module1_wrapper(x, w_norm, w_up):
    return x, w_norm


def rms_gate_module123_wrapper(x, w_norm, w_up):
    print("about to fail", file=sys.stderr)
    raise RuntimeError("kernel launch failed on purpose")


def custom_name(x, w_norm, w_up):
    return x.float()[:, :1]
