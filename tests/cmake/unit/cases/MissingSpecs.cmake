phasegate_add_op(x OP_DIR ${OPS}/nosuch IMPL fake_impl RUNNER "${FAKE_RUNNER}")
