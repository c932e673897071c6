phasegate_add_op(x IMPL fake_impl RUNNER "${FAKE_RUNNER}")
