"""rms_gate phase 1 that logs PG_VIA from its environment (tests/impl/python: which
interpreter wrapper started the worker)."""
import os

from rms_gate_impl import rms_gate_module1_wrapper as _phase1


def rms_gate_module1_wrapper(x, w_norm, w_up):
    print(f"PG_VIA={os.environ.get('PG_VIA', '')}")
    return _phase1(x, w_norm, w_up)
