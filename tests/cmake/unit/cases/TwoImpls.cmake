phasegate_add_op(x OP_DIR ${OPS}/basic IMPL fake_impl REPLAY dumps RUNNER "${FAKE_RUNNER}")
