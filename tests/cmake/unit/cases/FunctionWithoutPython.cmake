phasegate_add_op(x OP_DIR ${OPS}/basic IMPL fake_impl FUNCTION f RUNNER "${FAKE_RUNNER}")
