phasegate_add_op(basic OP_DIR ${OPS}/basic IMPL fake_impl RUNNER "${FAKE_RUNNER}")
