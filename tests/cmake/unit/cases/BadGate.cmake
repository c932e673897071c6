phasegate_add_op(x OP_DIR ${OPS}/basic IMPL fake_impl GATE maybe RUNNER "${FAKE_RUNNER}")
