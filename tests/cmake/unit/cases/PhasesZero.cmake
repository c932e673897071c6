phasegate_add_op(x OP_DIR ${OPS}/basic IMPL fake_impl RUNNER "${FAKE_RUNNER}" PHASES 0)
