# The impl spec of each adapter, the golden library, a relative IMPL_COMMAND word
# (author warning), LEVELS passed to the listing.
set(ENV{PHASEGATE_FAKE_LOG} "${CMAKE_BINARY_DIR}/list.log")
add_library(fake_golden SHARED IMPORTED)
set_target_properties(fake_golden PROPERTIES IMPORTED_LOCATION "/nonexistent/libfake_golden.so")
phasegate_add_op(plug OP_DIR ${OPS}/basic IMPL fake_impl GOLDEN fake_golden
  RUNNER "${FAKE_RUNNER}" LEVELS L1 2 EXTRA_ARGS --no-bisect)
phasegate_add_op(exec OP_DIR ${OPS}/basic IMPL_COMMAND python3 run_case.cmake $<TARGET_FILE:fake_impl>
  RUNNER "${FAKE_RUNNER}" GATE OFF)
phasegate_add_op(replay OP_DIR ${OPS}/basic REPLAY dumps RUNNER "${FAKE_RUNNER}" GATE OFF
  REPORT_DIR my-reports)
