enable_language(C)
add_executable(fake_phasegate "${FAKE_SOURCE}")
phasegate_add_op(x OP_DIR ${OPS}/basic IMPL fake_impl RUNNER fake_phasegate DISCOVERY_MODE CONFIGURE)
