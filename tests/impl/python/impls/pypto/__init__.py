"""A stand-in for the pypto package (tests/impl/python): only what phasegate's worker
touches — RunMode with SIM and NPU, as the seed's dispatcher uses it, and a JIT entry
(pypto.frontend.jit / pypto.jit) that takes runtime_options and records the run_mode it
received when called, as pypto.frontend.jit's wrapper keeps it in _runtime_options."""
import enum
import sys

from . import frontend  # noqa: F401


class RunMode(enum.Enum):
    SIM = "sim"
    NPU = "npu"


jit = frontend.jit
RECEIVED = frontend.RECEIVED
