phasegate_add_op(x OP_DIR ${OPS}/basic IMPL_PYTHON impls/impl.py FUNCTION 1bad RUNNER "${FAKE_RUNNER}")
