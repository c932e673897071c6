phasegate_add_op(x OP_DIR ${OPS}/basic IMPL fake_impl TIMEOUT -5 RUNNER "${FAKE_RUNNER}")
