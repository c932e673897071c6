phasegate_add_op(x OP_DIR ${OPS}/basic IMPL fake_impl LEVELS L1 L9 RUNNER "${FAKE_RUNNER}")
