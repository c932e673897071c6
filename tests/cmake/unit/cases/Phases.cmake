# PHASES 1 on a 3-module op (day one): M2 and M3 are still listed, labelled
# not_implemented, and their runs get --implemented-phases 1 (the runner skips them as
# not implemented yet); an IMPL_PYTHON op (the pypto / verifier workflow) the same.
phasegate_add_op(basic OP_DIR ${OPS}/basic IMPL fake_impl RUNNER "${FAKE_RUNNER}" PHASES 1)
set(Python3_EXECUTABLE /usr/bin/python3)
phasegate_add_op(py OP_DIR ${OPS}/basic IMPL_PYTHON impls/impl.py RUNNER "${FAKE_RUNNER}"
  PHASES 2 REPORT_DIR py-reports)
