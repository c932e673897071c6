phasegate_add_op(x OP_DIR ${OPS}/basic RUNNER "${FAKE_RUNNER}")
