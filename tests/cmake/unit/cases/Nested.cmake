# Test entries with nested objects take the exact (slower) split path; "L2" levels.
phasegate_add_op(nested OP_DIR ${OPS}/nested IMPL fake_impl RUNNER "${FAKE_RUNNER}" GATE OFF)
