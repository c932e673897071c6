"""A stand-in for the pypto package (tests/impl/python): only what phasegate's worker
touches, RunMode with SIM and NPU, as the seed's dispatcher uses it."""
import enum


class RunMode(enum.Enum):
    SIM = "sim"
    NPU = "npu"
