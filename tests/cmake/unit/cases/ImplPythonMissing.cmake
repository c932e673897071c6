phasegate_add_op(x OP_DIR ${OPS}/basic IMPL_PYTHON impls/nowhere.py RUNNER "${FAKE_RUNNER}")
