"""tests/cmake/unit: an IMPL_PYTHON file (never run by the fake runner)."""
