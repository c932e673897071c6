# Case tests without the `phasegate serve` fixture: `ctest -FA '.*'` (no daemon: the run
# starts its own impl process), `-R` of one case (the fixtures come along), and a daemon
# that cannot start (the start test is skipped, the cases still run, standalone).
phasegate_add_op(basic OP_DIR ${OPS}/basic IMPL fake_impl RUNNER "${FAKE_RUNNER}")
