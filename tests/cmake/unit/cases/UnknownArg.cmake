phasegate_add_op(x OP_DIR ${OPS}/basic IMPL fake_impl FOO bar RUNNER "${FAKE_RUNNER}")
