phasegate_add_op(x OP_DIR ${OPS}/basic IMPL_PYTHON impls/impl.py RUNNER "${FAKE_RUNNER}" PHASES 4)
