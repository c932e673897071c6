phasegate_add_op(dup OP_DIR ${OPS}/dup IMPL fake_impl RUNNER "${FAKE_RUNNER}")
