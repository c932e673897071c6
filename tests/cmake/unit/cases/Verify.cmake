# Extra ctest arguments for every verify target (here: leave one case out).
set(PHASEGATE_VERIFY_CTEST_ARGS "-E;^basic/M3/L2/(c|nothing)$")
phasegate_add_op(basic OP_DIR ${OPS}/basic IMPL fake_impl RUNNER "${FAKE_RUNNER}")
