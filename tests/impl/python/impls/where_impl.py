"""rms_gate phase 1 that logs where the phasegate package running it was imported from
(tests/impl/python install: the installed runner uses the installed package)."""
import sys

from rms_gate_impl import rms_gate_module1_wrapper as _phase1


def rms_gate_module1_wrapper(x, w_norm, w_up):
    print(f"phasegate package: {sys.modules['phasegate'].__file__}", file=sys.stderr)
    return _phase1(x, w_norm, w_up)
