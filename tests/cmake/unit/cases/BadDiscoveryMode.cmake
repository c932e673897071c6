phasegate_add_op(x OP_DIR ${OPS}/basic IMPL fake_impl DISCOVERY_MODE LATER RUNNER "${FAKE_RUNNER}")
