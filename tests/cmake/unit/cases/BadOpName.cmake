phasegate_add_op("bad name" OP_DIR ${OPS}/basic IMPL fake_impl RUNNER "${FAKE_RUNNER}")
