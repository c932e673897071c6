# A multi-config generator: discovery and include files per configuration, POST_BUILD
# and PRE_TEST.
enable_language(C)
add_executable(fake_phasegate "${FAKE_SOURCE}")
phasegate_add_op(basic OP_DIR ${OPS}/basic IMPL fake_impl RUNNER fake_phasegate)
phasegate_add_op(pre OP_DIR ${OPS}/basic IMPL fake_impl RUNNER fake_phasegate
  DISCOVERY_MODE PRE_TEST GATE OFF)
