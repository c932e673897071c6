phasegate_add_op(x OP_DIR ${OPS}/basic IMPL nosuch_impl RUNNER "${FAKE_RUNNER}")
