"""rms_gate phase 1 written against pypto, on an interpreter without pypto
(tests/impl/python/run_env.py, scenario infra): `import pypto` raises
ModuleNotFoundError: No module named 'pypto'. This directory holds no pypto/."""
import pypto  # noqa: F401


def rms_gate_module1_wrapper(x, w_norm, w_up):  # never reached
    return x
