# PRE_TEST: ctest itself discovers when the tests file is missing or stale.
enable_language(C)
add_executable(fake_phasegate "${FAKE_SOURCE}")
if(NOT EXISTS "${CMAKE_BINARY_DIR}/basic")
  file(COPY "${OPS}/basic" DESTINATION "${CMAKE_BINARY_DIR}")
endif()
phasegate_add_op(basic OP_DIR "${CMAKE_BINARY_DIR}/basic" IMPL fake_impl RUNNER fake_phasegate
  DISCOVERY_MODE PRE_TEST)
