"""Impl modules that are wrong on purpose (tests/python_impl): rms_gate phase 1 is
missing, phase 12 returns two leaves, phase 123 raises; `custom_name` is the
`::FUNCTION` form; `report_run_mode` answers with what the worker set."""
import sys


def rms_gate_module12_wrapper(x, w_norm, w_up):
    return x, w_norm


def rms_gate_module123_wrapper(x, w_norm, w_up):
    print("about to fail", file=sys.stderr)
    raise RuntimeError("kernel launch failed on purpose")


def custom_name(x, w_norm, w_up):
    return x.float()[:, :1].expand(-1, 1)
