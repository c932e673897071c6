phasegate_add_op(badjson OP_DIR ${OPS}/badjson IMPL fake_impl RUNNER "${FAKE_RUNNER}")
