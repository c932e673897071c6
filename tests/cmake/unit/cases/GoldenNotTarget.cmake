phasegate_add_op(x OP_DIR ${OPS}/basic IMPL fake_impl GOLDEN nosuch_golden RUNNER "${FAKE_RUNNER}")
