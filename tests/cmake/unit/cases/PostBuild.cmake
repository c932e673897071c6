# A runner built by the project: NOT_BUILT before the build, discovery after it,
# rediscovery when the suite, the contract or the runner changes.
enable_language(C)
add_executable(fake_phasegate "${FAKE_SOURCE}")
if(NOT EXISTS "${CMAKE_BINARY_DIR}/basic")
  file(COPY "${OPS}/basic" DESTINATION "${CMAKE_BINARY_DIR}")
endif()
phasegate_add_op(basic OP_DIR "${CMAKE_BINARY_DIR}/basic" IMPL fake_impl RUNNER fake_phasegate)
