"""A pypto-style impl (tests/impl/python): imports the stand-in pypto package, logs the
run mode phasegate's worker set both ways the seed's workflow sets it — the module
attribute `__pypto_run_mode__` (the seed's dispatcher) and runtime_options["run_mode"]
on its JIT entry (the stand-in's jit logs what it received) — and computes rms_gate
phase 1 correctly."""
import sys

import pypto  # noqa: F401 — the stand-in in tests/impl/python/impls/pypto

from rms_gate_impl import rms_gate_module1_wrapper as _phase1


@pypto.frontend.jit(runtime_options={"run_mode": None})
def _kernel(x, w_norm, w_up):
    return _phase1(x, w_norm, w_up)


def rms_gate_module1_wrapper(x, w_norm, w_up):
    mode = globals().get("__pypto_run_mode__")
    name = mode.name if isinstance(mode, pypto.RunMode) else repr(mode)
    print(f"pypto_impl: __pypto_run_mode__ = {name}", file=sys.stderr)
    return _kernel(x, w_norm, w_up)
