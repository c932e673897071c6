phasegate_add_op(listfail OP_DIR ${OPS}/listfail IMPL fake_impl RUNNER "${FAKE_RUNNER}")
